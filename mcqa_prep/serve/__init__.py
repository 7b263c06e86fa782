"""`serve`: a NeMo Gym 0.7.0 `mcqa` resources server that keeps the grading contract at verify time.

    contract.py   the served contract and each row's stamp against it (match, unstamped, mismatch + fields)
    verifier.py   one verify request -> (HTTP status, NeMo Gym's verify response + status and rule)
    aggregate.py  /aggregate_metrics: NeMo Gym's aggregate document + the contract accounting
    metrics.py    counters in shared memory, summed over the worker processes (/metrics)
    app.py        the ASGI app: routes, body limits, JSON errors, grading off the event loop for data regexes
    server.py     the listening socket, the worker processes, SIGTERM's drain
    startup.py    which contract to serve (preparations verified, a policy checked against them)
    component.py  `gym-component`: a NeMo Gym resources-server folder named `mcqa` that delegates here

Design: docs/design/serve.md. The web stack (uvicorn, httptools, uvloop) is the `serve` extra; nothing here imports
it until a server runs.
"""
