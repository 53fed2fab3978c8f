"""The app ``bench/console.py`` serves (``LUNORA_APP=_console_app:app``): the five agents its rows name.

No run is started by the benchmark; the API only reads the database it was pointed at.
"""

from __future__ import annotations

from lunora_jobs import Lunora, define_agent

AGENTS = [define_agent(name=f"agent-{i}", instructions="Benchmark agent.", model="offline") for i in range(5)]
app = Lunora.from_env(agents=AGENTS)
