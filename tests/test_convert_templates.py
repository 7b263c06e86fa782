"""Templates: the plain-text fast path renders exactly what Jinja renders, StrictUndefined names the variable,
the sandbox holds, front matter declares the grading, and every template passes validate's controls before
a row is written (or the run fails, with nothing written)."""

from __future__ import annotations

import json
import random

import pytest

from mcqa_prep.convert.checks import TemplateChecker, is_builtin
from mcqa_prep.convert.template_files import load_templates, parse_template_file
from mcqa_prep.convert.templates import (
    BUILTIN,
    Template,
    _make_plan,
    render_variables,
)
from mcqa_prep.errors import UsageError
from mcqa_prep.labels import LETTERS

try:
    from .convert_layouts import make_layout, read_jsonl
except ImportError:
    from convert_layouts import make_layout, read_jsonl


def _jinja(t: Template, v: dict) -> str:
    t.compile()
    return t._compiled.render(v)


PLAIN = """{% if context %}Context: {{ context }}
{% endif %}{{ question }} {{ letters }} {{ row }}
{% if options %}{{ options }}{% endif %}
{% if subject %}({{ subject }}){% else %}(no subject){% endif %}
{{ options_block }}
{{ n_options }} options, {{ first_letter }}-{{ last_letter }}: {{ letters_slash }} / {{ letters_comma }}"""


@pytest.mark.parametrize("tid", [*BUILTIN, "plain"])
def test_fast_path_renders_what_jinja_renders(tid):
    t = BUILTIN[tid] if tid != "plain" else Template("plain", PLAIN, "strict_single_letter_boxed")
    t.compile()
    rnd = random.Random(tid)
    row_render = t.row_renderer()
    for _ in range(50):
        n = rnd.randint(2, 26)
        texts = [f"choice {k} {'x' * rnd.randint(0, 5)}" for k in range(n)]
        q = f"Q {rnd.random()}?{' {{ not a tag }}' if rnd.random() < 0.3 else ''}"
        ctx = rnd.choice([None, "", "Some passage."])
        subj = rnd.choice([None, "college_physics"])
        v = render_variables(q, texts, context=ctx, subject=subj)
        expected = _jinja(t, v)
        assert t.render(v) == expected
        assert row_render(q, texts, ctx, subj, None) == expected
    assert t._plan is not None  # every built-in takes the fast path (answer_is: a literal replace filter)


def test_plan_refuses_anything_but_names_and_tests():
    env_parse = BUILTIN["boxed"]
    env_parse.compile()
    from mcqa_prep.convert.templates import _env

    for src in (
        "{{ question | upper }}",
        "{% for o in options %}{{ o.text }}{% endfor %}",
        "{{ row.q }}",
        "{{ typo }}",
    ):
        assert _make_plan(_env().parse(src).body) is None, src


def test_undefined_variable_is_named(tmp_path, cli):
    f = tmp_path / "t.j2"
    f.write_text(
        "---\ngrading_mode: lenient_answer_colon\n---\n{{ qustion }}\n{{ options_block }}\nAnswer: <letter>\n"
    )
    src, _ = make_layout(tmp_path, "mmlu")
    res = cli("convert", src, "-o", tmp_path / "o.jsonl", "--template", f)
    assert res.exit_code == 2
    assert "'qustion' is undefined" in res.output and "the variables are question, context" in res.output
    assert not (tmp_path / "o.jsonl").exists()


def test_sandbox_blocks_python_internals(tmp_path, cli):
    f = tmp_path / "t.j2"
    f.write_text(
        "---\ngrading_mode: strict_single_letter_boxed\n---\n{{ question.__class__.__mro__ }}\n{{ options_block }}\n"
    )
    src, _ = make_layout(tmp_path, "mmlu")
    res = cli("convert", src, "-o", tmp_path / "o.jsonl", "--template", f)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "o.jsonl").exists()


def test_loops_and_row_columns_in_user_templates(tmp_path, cli):
    f = tmp_path / "verdict.j2"
    f.write_text(
        "---\n"
        "id: verdict_v1\n"
        "output_regex: Verdict:\\s*\\(?((?-i:[A-Z]))\\)?(?![^\\n]*\\w)\n"
        "narrow_letters: true\n"
        "description: one option per line, subject from the source row\n"
        "---\n"
        "[{{ row.subject }}] {{ question }}\n"
        "{% for o in options %}({{ o.letter }}) {{ o.text }}\n{% endfor %}"
        'End with "Verdict: <letter>" where <letter> is {{ letters | join(", ") }}.\n'
    )
    src, cases = make_layout(tmp_path, "mmlu")
    out = tmp_path / "o.jsonl"
    res = cli("convert", src, "-o", out, "--template", f, "--shuffle")
    assert res.exit_code == 0, res.output
    rows = read_jsonl(out)
    assert rows[0]["template_metadata"] == {
        "template_id": "verdict_v1",
        "output_regex": r"Verdict:\s*\(?((?-i:[A-D]))\)?(?![^\n]*\w)",  # narrowed to the 4 options
    }
    assert rows[0]["grading_mode"] == "strict_single_letter_boxed"
    prompt = rows[0]["responses_create_params"]["input"][0]["content"]
    assert prompt.startswith("[college_physics] Question 0:") and "\n(A) " in prompt
    assert cli("validate", out).exit_code == 0


@pytest.mark.parametrize(
    "header, needle",
    [
        ("", "does not say how its answer is graded"),
        ("---\ngrading_mode: robust\n---\n", "grading_mode 'robust'"),
        ("---\ngrading_mode: lenient_answer_colon\nfoo: bar\n---\n", ":3: front matter key 'foo'"),
        ("---\nid: a\nid: b\ngrading_mode: lenient_boxed\n---\n", ":3: id given twice"),
        # YAML, with the line of the problem: an unquoted ': ' inside a value, a number for a text
        (
            "---\ngrading_mode: lenient_boxed\noutput_regex: Answer: ([A-Z])\n---\n",
            ":3: front matter is not valid YAML",
        ),
        (
            "---\nid: 2024\ngrading_mode: lenient_boxed\n---\n",
            ":2: id: expected text, got 2024; quote a value",
        ),
        ("---\n- grading_mode\n---\n", ":2: front matter must be 'KEY: value' lines"),
        ("---\ngrading_mode: lenient_boxed\n", "never closed"),
    ],
)
def test_front_matter_errors(tmp_path, header, needle):
    f = tmp_path / "t.j2"
    f.write_text(header + "{{ question }}\n{{ options_block }}\n")
    with pytest.raises(UsageError) as info:
        parse_template_file(f)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)  # one line


def test_front_matter_list_of_patterns(tmp_path):
    f = tmp_path / "t.j2"
    f.write_text(
        "---\noutput_regex:\n  - Verdict:\\s*([A-Z])\\b\n  - \\\\boxed\\{([A-Z])\\}\n  - 'Answer: ([A-Z])'\n"
        "---\n{{ question }}\n"
    )
    t = parse_template_file(f)
    assert t.output_regex == [r"Verdict:\s*([A-Z])\b", r"\\boxed\{([A-Z])\}", "Answer: ([A-Z])"]
    assert t.id == "t" and t.grading_mode == "strict_single_letter_boxed"


@pytest.mark.parametrize(
    "front, body, needle",
    [
        # reads any letter anywhere: a refusal is graded as an option
        ("output_regex: ([A-D])", "{{ question }}\n{{ options_block }}", "a refusal"),
        # the prompt shows the answer format with a real letter: the prompt itself scores
        (
            "output_regex: Verdict:\\s*([A-Z])",
            "{{ question }}\n{{ options_block }}\nE.g. Verdict: A",
            "[regex_negative_control]",
        ),
        # a mode template whose prompt ends with a filled-in box
        (
            "grading_mode: strict_single_letter_boxed",
            "{{ question }}\n{{ options_block }}\nlike \\boxed{B}",
            "the prompt itself",
        ),
        # the letter class misses E: a compliant answer with E never scores (rows with 5 options)
        (
            "output_regex: Verdict:\\s*([A-D])\\b",
            "{{ question }}\n{{ options_block }}\nVerdict: <letter>",
            "with 5 options",
        ),
        # the audit: under NeMo Gym's IGNORECASE a loose letter class reads "Verdict: a careful reading..." as A
        (
            "output_regex: Verdict:\\s*\\(?([A-Z])\\)?(?![A-Za-z0-9])",
            "{{ question }}\n{{ options_block }}\nVerdict: <letter>",
            "[regex_audit]",
        ),
        # two capture groups: NeMo Gym crashes on it
        ("output_regex: (Verdict):\\s*([A-Z])", "{{ question }}\n{{ options_block }}", "[regex_groups]"),
        # an option text missing from the prompt
        ("grading_mode: lenient_answer_colon", "{{ question }} {{ first_letter }}", "[option_not_in_prompt]"),
    ],
)
def test_templates_failing_controls_write_nothing(tmp_path, cli, front, body, needle):
    f = tmp_path / "bad.j2"
    f.write_text(f"---\n{front}\n---\n{body}\n")
    src, _ = make_layout(tmp_path, "commonsense_qa")  # 5 options
    out = tmp_path / "o.jsonl"
    res = cli("convert", src, "-o", out, "--template", f, "--format", "json")
    assert res.exit_code == 2, res.output
    doc = json.loads(res.stdout)
    message = doc["error"]["message"]
    assert doc["ok"] is False and "fails its controls" in message and needle in message, message
    assert not out.exists() and not (tmp_path / "o.rejects.jsonl").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_weighted_mix_is_deterministic_per_row(tmp_path, cli):
    src, cases = make_layout(tmp_path, "mmlu", n=400)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    args = ["--template", "boxed:0.7", "--template", "answer_colon:0.3"]
    assert cli("convert", src, "-o", a, *args).exit_code == 0
    assert cli("convert", src, "-o", b, *args).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    rows = read_jsonl(a)
    share = sum(r["template_metadata"]["template_id"] == "boxed" for r in rows) / len(rows)
    assert 0.6 < share < 0.8
    modes = {r["template_metadata"]["template_id"]: r["grading_mode"] for r in rows}
    assert modes == {"boxed": "strict_single_letter_boxed", "answer_colon": "lenient_answer_colon"}


def test_one_question_two_templates_one_uuid(tmp_path, cli):
    src, _ = make_layout(tmp_path, "mmlu")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert cli("convert", src, "-o", a, "--template", "boxed").exit_code == 0
    assert cli("convert", src, "-o", b, "--template", "final_choice").exit_code == 0
    ra, rb = read_jsonl(a), read_jsonl(b)
    assert [r["uuid"] for r in ra] == [r["uuid"] for r in rb]
    assert {r["template_metadata"]["template_id"] for r in rb} == {"final_choice"}
    # both together validate: a reused uuid with another prompt is a warning only, never an error
    res = cli("validate", a, b, "--format", "json")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["summary"]["errors"] == 0


def test_template_spec_errors():
    with pytest.raises(UsageError, match="neither a built-in template"):
        load_templates(["nope"])
    with pytest.raises(UsageError, match="positive number"):
        load_templates(["boxed:0"])
    with pytest.raises(UsageError, match="given twice"):
        load_templates(["boxed:1", "boxed:2"])


def test_boxed_template_prompts_never_grade_to_a_letter():
    """The built-in boxed template ends with an empty \\boxed{}: the boxed modes read only the last box, so
    the per-row self-check is skipped for it. Whatever the question holds, the prompt yields no letter."""
    from mcqa_prep.convert.checks import SelfCheck as _SelfCheck
    from mcqa_prep.grader import grade_text

    t = BUILTIN["boxed"]
    assert _SelfCheck(t).never
    for q in ("Is \\boxed{C} right?", "\\boxed{A} \\boxed{B}", "Answer: \\boxed{D: x}", "\\boxed{"):
        texts = ["x", "y", "z", "w"]
        prompt = t.render(render_variables(q, texts, None, None, None, t.variables_used()))
        opts = [{L: x} for L, x in zip("ABCD", texts, strict=True)]
        for mode in ("strict_single_letter_boxed", "lenient_boxed"):
            assert grade_text(prompt, opts, "C", mode, t.template_metadata()).extracted_answer is None
    assert not _SelfCheck(BUILTIN["final_choice"]).never


LOOP = """{{ question }}
{% for o in options %}{{ o.letter }}) {{ o.text | upper }}
{% endfor %}{{ letters | join('/') }} {{ n_options * 2 }}"""


def test_a_template_beyond_the_plan_renders_in_the_sandbox_as_jinja_renders():
    import jinja2

    t = Template("loop", LOOP, "strict_single_letter_boxed")
    t.compile()
    assert t._plan is None and t._sandbox is not None and t._sandbox.proc is not None
    ref = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    for n in (2, 5, 26):
        v = render_variables(f"Q{n}?", [f"opt {k}" for k in range(n)])
        assert t.render(v) == ref.from_string(LOOP).render(v)
    with pytest.raises(UsageError, match="'qustion' is undefined; the variables are question"):
        Template("typo", "{{ qustion }}{% for x in letters %}{% endfor %}", "lenient_boxed").render(
            render_variables("q", ["a", "b"])
        )
    t._sandbox.close()


@pytest.mark.parametrize(
    "body,bound",
    [
        ("{% for a in range(99999) %}{% for b in range(99999) %}{% endfor %}{% endfor %}", "more than 1 s"),
        ('{{ "x" * 10000000000 }}', "MiB of memory"),
        ("{{ lipsum(10000000) }}", "took more than"),  # time or memory, whichever comes first
        ('{{ "x" * 4000 }}', "longer than 1,000 characters"),
        ("{{ (10 ** 300000000) % 7 }}", "more than 1 s"),
    ],
)
def test_a_template_past_a_bound_is_one_error_naming_it(monkeypatch, body, bound):
    """CPU, memory and output are bounded per row; the parent never compiles (so never folds) the template."""
    from mcqa_prep.convert import sandbox

    monkeypatch.setattr(sandbox, "RENDER_SECONDS", 1.0)
    monkeypatch.setattr(sandbox, "RENDER_MEMORY", 256 << 20)
    monkeypatch.setattr(sandbox, "RENDER_CHARS", 1000)
    t = Template("hostile", "{{ question }}\n" + body, "strict_single_letter_boxed", origin="hostile.j2")
    assert "question" in t.variables_used()  # read from the parse tree, nothing evaluated
    with pytest.raises(sandbox.TemplateBound) as err:
        t.render(render_variables("q", ["a", "b"]))
    msg = str(err.value)
    assert msg.startswith("template 'hostile' (hostile.j2): ") and bound in msg and "\n" not in msg
    assert err.value.reason == "template_bound"
    proc = t._sandbox.proc
    assert proc is None or proc.poll() is None  # killed and forgotten, or alive and reusable


def test_row_values_json_has_no_form_for_render_in_the_sandbox_as_printed():
    """The sandbox's variables cross as JSON (no class crosses the pipe): a date, a decimal or bytes from a
    Parquet source arrives as its text, which is what Jinja prints for it in the parent."""
    import datetime
    import decimal

    import jinja2

    body = (
        "{% for o in options %}{{ o.text | upper }} {% endfor %}{{ row.day }} {{ row.price }} {{ row.raw }}"
    )
    t = Template("values", body, "strict_single_letter_boxed")
    t.compile()
    assert t._plan is None and t._sandbox is not None
    row = {"day": datetime.datetime(2024, 1, 2, 3, 4), "price": decimal.Decimal("1.50"), "raw": b"\x00"}
    v = render_variables("Q?", ["a", "b"], row=row)
    ref = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    assert t.render(v) == ref.from_string(body).render(v) == "A B 2024-01-02 03:04:00 1.50 b'\\x00'"
    t._sandbox.close()


@pytest.mark.parametrize("tid", list(BUILTIN))
def test_every_builtin_passes_its_controls_at_every_option_count(tid):
    """Stands for the built-ins' controls at run time (convert/checks.py skips them for an unchanged built-in):
    the template as --template loads it, probed at every option count a converted row can have."""
    (t,) = load_templates([tid])
    checker = TemplateChecker(probe_builtins=True)
    try:
        for n in range(2, len(LETTERS) + 1):
            checker.ensure(t, n, {})
    finally:
        checker.close()
    assert checker.checked == [{"template_id": tid, "options": n} for n in range(2, len(LETTERS) + 1)]


def test_only_an_unchanged_builtin_skips_its_controls(tmp_path):
    """A template file reusing a built-in's id, or a built-in with another output_regex, is probed."""
    (t,) = load_templates(["final_choice"])
    assert is_builtin(t)
    narrow = Template(**{**{k: getattr(t, k) for k in ("id", "source", "grading_mode", "letter_class")},
                         "output_regex": t.output_regex.replace("[A-Z]", "[A-D]")})  # fmt: skip
    assert not is_builtin(narrow)
    f = tmp_path / "final_choice.j2"
    f.write_text("---\nid: final_choice\noutput_regex: 'Final choice:\\s*((?-i:[A-D]))'\n---\n"
                 "{{ question }}\n{{ options_block }}\nEnd with Final choice: <letter>.\n")  # fmt: skip
    (user,) = load_templates([str(f)])
    assert not is_builtin(user)
    checker = TemplateChecker()
    try:
        checker.ensure(t, 5, {})  # trusted: proven by the test above
        with pytest.raises(UsageError, match="fails its controls with 1 options"):
            checker.ensure(t, 1, {})  # outside what the test above proves: probed
    finally:
        checker.close()
    for tpl in (narrow, user):  # a checker per template: a run's template ids are distinct
        other = TemplateChecker()
        try:
            with pytest.raises(UsageError, match="fails its controls with 5 options"):
                other.ensure(tpl, 5, {})
        finally:
            other.close()
    assert checker.checked == [{"template_id": "final_choice", "options": 5}]
