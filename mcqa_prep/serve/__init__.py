"""`serve`: a NeMo Gym 0.7.0 `mcqa` resources server that keeps the grading contract at verify time.

    contract.py       the served contract and each row's stamp against it (match, unstamped, mismatch + fields)
    request_model.py  NeMo Gym's request models as checks (what the stock server refuses with 422)
    verifier.py       one verify request -> (HTTP status, the stock server's eight fields + the mcqa_prep record)
    aggregate.py      /aggregate_metrics: NeMo Gym's document, computed as its mcqa server computes it
    ng_stats.py       ... its arithmetic: pandas' reductions, Python's compensated sum, the t interval
    ng_passk.py       ... its pass@k / majority@k / across-run figures, in linear time
    metrics.py        counters in shared memory, summed over the worker processes (/metrics)
    jsonio.py         JSON in and out, every integer exact
    app.py            the ASGI app: routes (+ NeMo Gym's health routes and /ng-rollout/<id>/ prefix), body
                      limits, JSON errors, grading off the event loop under a per-request bound
    isolate.py        the per-worker grading child for large bodies, killed at the bound
    server.py         the listening socket, the worker processes (tied to their parent), SIGTERM's drain
    startup.py        which contract to serve (preparations verified, a policy checked against them)
    component.py      `gym-component`: a NeMo Gym resources-server folder named `mcqa` (config, licenses)
    component_files.py  ... the texts of that folder
    gym_entry.py      ... what its app.py runs when `gym env start` starts it: this server, on NeMo Gym's port

Design: docs/design/serve.md. The web stack (uvicorn, httptools, uvloop) is the `serve` extra; nothing here imports
it until a server runs.
"""
