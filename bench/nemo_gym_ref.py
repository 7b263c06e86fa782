"""NeMo Gym 0.7.0's own `mcqa` grading code, loaded from its installed wheel, as the bench's baseline.

`make bench-deps` installs the wheel with --no-deps (plus the openai and pydantic versions its request model
needs) into bench/.cache/site, a bench-only location: neither the package nor its tests depend on it. NeMo Gym
code is never copied here: `resources_servers/mcqa/app.py` and its request model (`nemo_gym.base_resources_server`,
`nemo_gym.openai_utils`) are imported from that directory as they are.

What is stubbed, and why: those modules import NeMo Gym's server framework (FastAPI, uvicorn, aiohttp, Hydra,
Rich, W&B, the judge, the sandbox, telemetry, the HTTP client in `server_utils`), none of which the grading or the
request model use. A meta-path finder answers those imports with stub modules whose every attribute is an inert
class (a pydantic field of such a type validates anything). The request and response models (`MCQAVerifyRequest`,
`NeMoGymResponse`, ...) and every grading function are NeMo Gym's own.

    ng = load()                        # raises NeMoGymMissing with the command to run when not installed
    ng.strict(text, allowed_letters)   # NeMo Gym's extraction functions, per mode
    ng.branch(mode)(text, allowed, options, body)  # verify()'s own code for one mode (below)
    ng.verify_row(row)                 # its verify path: request model + verify(), no HTTP

`branch(mode)`: verify() decides each grading mode inline (lenient_answer_colon has no function of its own). To
time exactly NeMo Gym's work for one mode, the statements of that mode's branch are taken from verify()'s source
in the installed wheel (its syntax tree, at run time) and compiled into a function of (text, allowed_letters,
options, body) in the app module's namespace: `pred = None`, the branch's statements, `return pred`; the
allowed letters are what verify() derives first (`_get_allowed_letters_from_options`). Nothing of it is
written here.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

# MCQA_PREP_NEMO_GYM_SITE: another directory holding NeMo Gym 0.7.0 (the site-packages of a venv where it is
# installed with its dependencies, as `make test-py313` gives it: the bench's site holds 3.11 wheels)
SITE = Path(os.environ.get("MCQA_PREP_NEMO_GYM_SITE") or Path(__file__).resolve().parent / ".cache" / "site")
VERSION = "0.7.0"

# Modules of NeMo Gym's server framework that its mcqa app and request model import but never use to grade.
STUB_PACKAGES = ("fastapi", "starlette", "uvicorn", "aiohttp", "wandb", "scipy", "omegaconf", "mcp",
                 "multidict", "rich", "hydra")  # fmt: skip
STUB_MODULES = (
    "nemo_gym.server_utils",
    "nemo_gym.global_config",
    "nemo_gym.judge",
    "nemo_gym.reward_profile",
    "nemo_gym.rollout_correlation",
    "nemo_gym.sandbox",
    "nemo_gym.sandbox.access",
    "nemo_gym.telemetry",
    "nemo_gym.telemetry.endpoints",
)


class NeMoGymMissing(RuntimeError):
    pass


class _Inert:
    """Stands for any class of a stubbed module: accepts any arguments, validates anything in pydantic."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __class_getitem__(cls, item: Any) -> type:
        return cls

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.any_schema()


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (_Inert,), {"__module__": self.__name__})
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname in STUB_MODULES or fullname.split(".")[0] in STUB_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class NeMoGym:
    """NeMo Gym's mcqa functions and its verify path, bound to one loaded app module."""

    def __init__(self, app: types.ModuleType) -> None:
        self.app = app
        self.server = object.__new__(app.MCQAResourcesServer)  # no web server: verify() is a plain coroutine
        self.server.config = types.SimpleNamespace(grading_mode=None)
        self.allowed = app._get_allowed_letters_from_options
        self._branches: dict[str, Any] = {}

    # -- extraction, per mode: NeMo Gym's own functions --------------------------------------------------

    def strict(self, text: str, allowed: set[str], options: Any = None, tm: Any = None) -> str | None:
        return self.app._parse_answer_letter_strict_boxed(text, allowed)[0]

    def lenient_boxed(self, text: str, allowed: set[str], options: Any = None, tm: Any = None) -> str | None:
        pred = self.app._parse_answer_letter_strict_boxed(text, allowed)[0]
        return pred if pred is not None else self.app._match_option_text(text, options, allowed)

    def answer_colon_md(
        self, text: str, allowed: set[str], options: Any = None, tm: Any = None
    ) -> str | None:
        prefix = (tm or {}).get("answer_prefix")
        pred = self.app._extract_from_answer_payloads(text, allowed, answer_prefix=prefix)
        if pred is None and prefix:
            pred = self.app._parse_answer_letter_strict_boxed(text, allowed)[0]
        return pred

    def custom_regex(self, text: str, allowed: set[str], options: Any = None, tm: Any = None) -> str | None:
        return self.app._parse_answer_with_custom_regexes(text, tm["output_regex"], allowed, options)

    def branch(self, mode: str) -> Any:
        """verify()'s own statements for `mode` as a function (text, allowed_letters, options, body) -> letter,
        allowed_letters from `allowed(options)`, body from
        `NeMoGym.body(template_metadata)`. Modes: verify()'s four grading modes, and "custom_regex" (its
        template_metadata output_regex step)."""
        if mode not in self._branches:
            self._branches[mode] = _compile_branch(self.app, mode)
        return self._branches[mode]

    @staticmethod
    def body(template_metadata: Any) -> BranchBody:
        return BranchBody(template_metadata)

    # -- the whole grading decision: verify() without pydantic --------------------------------------------

    def grade(self, text: str, options: Any, gold: str, mode: str | None = None, tm: Any = None) -> Any:
        """verify()'s grading for one text, with the request and response models replaced by plain objects:
        what NeMo Gym does per row besides (de)serialising. lenient_answer_colon has no function of its own in
        NeMo Gym (it is inline in verify()), so this is how its extraction is measured."""
        body = _Body(text, options, gold, mode, tm)
        return _run(self._verify_light(body))

    async def _verify_light(self, body: Any) -> Any:
        saved = self.app.MCQAVerifyResponse
        self.app.MCQAVerifyResponse = _light_response
        try:
            return await self.server.verify(body)
        finally:
            self.app.MCQAVerifyResponse = saved

    # -- the verify path: request model + verify() + response serialised -----------------------------------

    def verify_row(self, row: dict[str, Any]) -> bytes:
        """One verify request as the server handles it, without HTTP: validate the request model, verify(),
        serialise the response model to JSON."""
        body = self.app.MCQAVerifyRequest.model_validate(row)
        return _run(self.server.verify(body)).model_dump_json().encode()

    def verify_result(self, row: dict[str, Any]) -> Any:
        """verify_row without serialising the response model: the response object itself, for a caller that
        writes only some of its fields (the peer of `rescore --output-shape grading`)."""
        return _run(self.server.verify(self.app.MCQAVerifyRequest.model_validate(row)))


class _Body:
    """The attributes verify() reads from a request, as plain attributes."""

    __slots__ = ("options", "expected_answer", "grading_mode", "template_metadata", "response")

    def __init__(self, text: str, options: Any, gold: str, mode: str | None, tm: Any) -> None:
        self.options = options
        self.expected_answer = gold
        self.grading_mode = mode or "strict_single_letter_boxed"
        self.template_metadata = tm
        self.response = types.SimpleNamespace(output_text=text)

    def model_dump(self, exclude: Any = None) -> dict[str, Any]:
        return {}


def _light_response(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def _run(coro: Any) -> Any:
    """Run a coroutine that never awaits anything (verify() does not) without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("verify() awaited something; run it in an event loop")


def _verify_ast(app: types.ModuleType) -> ast.AsyncFunctionDef:
    tree = ast.parse(Path(app.__file__ or "").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AsyncFunctionDef) and node.name == "verify":
            return node
    raise RuntimeError("NeMo Gym's mcqa app has no async verify(): not the 0.7.0 layout")


def _branch_statements(verify: ast.AsyncFunctionDef, mode: str) -> list[ast.stmt]:
    for node in ast.walk(verify):
        if not isinstance(node, ast.If):
            continue
        test = node.test
        if (
            mode == "custom_regex"
        ):  # `if body.template_metadata and "output_regex" in body.template_metadata:`
            if "output_regex" in ast.unparse(test):
                return node.body
        elif (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "grading_mode"
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == mode
        ):
            return node.body
    raise RuntimeError(f"no branch for {mode!r} in NeMo Gym's verify(): not the 0.7.0 layout")


def _compile_branch(app: types.ModuleType, mode: str) -> Any:
    verify = _verify_ast(app)
    head = ast.parse("def nemo_gym_branch(text, allowed_letters, options, body):\n    pred = None\n")
    fn = head.body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body += _branch_statements(verify, mode)
    fn.body.append(ast.Return(value=ast.Name(id="pred", ctx=ast.Load())))
    ast.fix_missing_locations(head)
    namespace = dict(vars(app))
    exec(compile(head, app.__file__ or "<nemo_gym>", "exec"), namespace)  # noqa: S102 - NeMo Gym's own code
    return namespace["nemo_gym_branch"]


class BranchBody:
    """What a branch reads from the request besides text and options (made before timing: `body(tm)`)."""

    __slots__ = ("template_metadata",)

    def __init__(self, template_metadata: Any) -> None:
        self.template_metadata = template_metadata


_LOADED: NeMoGym | None = None


def load(site: Path = SITE) -> NeMoGym:
    """Import NeMo Gym's mcqa app from the bench-only install (once per process)."""
    global _LOADED
    if _LOADED is not None:
        return _LOADED
    app_file = site / "resources_servers" / "mcqa" / "app.py"
    if not app_file.is_file():
        raise NeMoGymMissing(f"NeMo Gym {VERSION} is not installed in {site}: run `make bench-deps`")
    if str(site) not in sys.path:
        sys.path.append(str(site))  # last: the venv's own packages win where both have one
    if not any(isinstance(f, _StubFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _StubFinder())
    spec = importlib.util.spec_from_file_location("nemo_gym_mcqa_app", app_file)
    assert spec is not None and spec.loader is not None
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    _LOADED = NeMoGym(app)
    return _LOADED


def version(site: Path = SITE) -> str | None:
    """The installed NeMo Gym version, or None."""
    found = sorted(site.glob("nemo_gym-*.dist-info"))
    return found[0].name.removesuffix(".dist-info").split("-", 1)[1] if found else None
