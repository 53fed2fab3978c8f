"""Options the API declares: every one is built now (none raises ``OptionNotAvailableError`` any more);
their defaults declare fine and independent approvals check their own option."""

from __future__ import annotations

import pytest

from lunora_jobs import define_agent, define_skill
from lunora_jobs.errors import InvalidAgentOptionError


def test_the_defaults_of_those_options_declare_fine() -> None:
    agent = define_agent(name="a", model="offline", telemetry=None, memory=None,
                         action_approval_mode="blocking",
                         skills=[define_skill("billing", "Confirm the order id first.")])
    assert agent.action_approval_mode == "blocking" and agent.memory is None


def test_independent_approvals_are_built_and_their_ttl_is_checked() -> None:
    agent = define_agent(name="a", model="offline", action_approval_mode="independent", proposal_ttl_s=90)
    assert (agent.action_approval_mode, agent.proposal_ttl_s) == ("independent", 90.0)
    for bad in (0, -1, True, "60"):
        with pytest.raises(InvalidAgentOptionError, match="proposal_ttl_s"):
            define_agent(name="a", model="offline", action_approval_mode="independent", proposal_ttl_s=bad)
