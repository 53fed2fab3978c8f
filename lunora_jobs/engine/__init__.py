"""The durable loop. It never imports Celery: steps are enqueued through a ``Dispatcher``.

- ``steps``: step names (``llm:turn:<n>``, ``tool:<name>:<call_id>``, ``approval:<call_id>``), message keys;
- ``plan``: pure "what runs next" from ledger facts;
- ``execute``: run one step (lock → claim → work → fenced completion → plan → dispatch);
- ``turn`` / ``tool`` / ``prompt``: the work of a turn step and of a tool step;
- ``advance`` / ``ledger``: fan-in, hibernating, finishing and failing runs from ledger rows;
- ``start`` / ``admission`` / ``handover`` / ``cancel``: starting runs, ``on_concurrent_run``, handing a
  thread to the next queued run, cancelling;
- ``approvals`` / ``sweep``: every approval decision path, recovering stalls;
- ``locks`` / ``keys`` / ``dispatch`` / ``context``: the run lock, Redis keys, dispatchers, dependencies.
"""
