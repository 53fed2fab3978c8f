"""The durable loop. It never imports Celery: steps are enqueued through a ``Dispatcher``.

- ``steps``: step names (``llm:turn:<n>``, ``tool:<name>:<call_id>``, ``approval:<call_id>``), message keys;
- ``plan``: pure "what runs next" from ledger facts;
- ``execute``: run one step (lock → claim → work → fenced completion → plan → dispatch);
- ``turn`` / ``tool`` / ``prompt``: the work of a turn step and of a tool step;
- ``advance`` / ``ledger``: fan-in, finishing and failing runs from ledger rows;
- ``start`` / ``approvals`` / ``sweep``: starting and cancelling runs, resolving approvals, recovering stalls;
- ``locks`` / ``keys`` / ``dispatch`` / ``context``: the run lock, Redis keys, dispatchers, dependencies.
"""
