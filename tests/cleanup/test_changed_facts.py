"""The re-check before apply, on its own: which changes of a group's live state stop an action.

`LiveGroupState` is what `group_calls.live_group` returns from DescribeGroups and OffsetFetch;
here it is built by hand, since the rule is pure logic (the broker tests are in
test_plans_and_apply.py).
"""
import pytest

from offsets_platform.cleanup.apply import changed_facts
from offsets_platform.kafka.group_calls import LiveGroupState
from offsets_platform.cleanup.plans import DELETE_GROUPS, OFFSET_DELETE, PlannedAction
from offsets_platform.kafka.admin_describe import MemberDescription

pytestmark = pytest.mark.fast  # make test-fast


def live(state="Empty", members=0, topics=frozenset(), offsets=None) -> LiveGroupState:
    return LiveGroupState(group="g", state=state, protocol_type="consumer" if members else "", member_count=members,
                          subscribed_topics=topics, committed_offsets=offsets or {("t", 0): 5})


DELETE = PlannedAction(DELETE_GROUPS, "g", None, None, "idle", {"member_count": 0, "offsets": {"t:0": 5}})
STALE = PlannedAction(OFFSET_DELETE, "g", "old", 0, "unsubscribed",
                      {"member_count": 1, "committed_offset": 3, "subscribed_topics": ["t"]})


def test_an_idle_group_that_still_looks_the_same_is_deleted():
    assert changed_facts(DELETE, live()) is None


def test_a_standalone_group_that_committed_again_is_not_deleted():
    # the reason names what changed: a value, a partition committed since, one no longer committed
    assert changed_facts(DELETE, live(offsets={("t", 0): 9})) == \
        "the group's committed offsets changed since the plan (it committed again): t:0 5 then, 9 now"
    assert changed_facts(DELETE, live(offsets={("t", 0): 5, ("u", 1): 2})).endswith(": u:1 none then, 2 now")
    assert changed_facts(DELETE, live(offsets={("u", 1): 2})).endswith(": t:0 5 then, none now, u:1 none then, 2 now")


def test_a_group_that_gained_members_or_left_empty_is_not_deleted():
    assert "gained members" in changed_facts(DELETE, live(state="Stable", members=1))
    assert "Dead now" in changed_facts(DELETE, live(state="Dead", offsets={}))


def test_a_stale_offset_is_kept_when_the_topic_is_subscribed_again_or_committed_again():
    offsets = {("old", 0): 3}
    assert changed_facts(STALE, live("Stable", 1, frozenset({"t"}), offsets)) is None
    assert "subscribes to old again" in changed_facts(STALE, live("Stable", 1, frozenset({"t", "old"}), offsets))
    assert "committed again" in changed_facts(STALE, live("Stable", 1, frozenset({"t"}), {("old", 0): 4}))
    assert "no longer committed" in changed_facts(STALE, live("Stable", 1, frozenset({"t"}), {}))


def test_a_regex_member_subscribes_to_the_topics_re2j_matches_as_the_broker_resolves_them():
    # Kafka's coordinator compiles a KIP-848 regular expression with RE2/J and matches whole topic
    # names (TopicRegexResolver); POSIX classes are RE2 syntax, a nested set to Python's `re`.
    member = MemberDescription("m", None, None, None, (), "[[:digit:]]+-events", [])
    assert member.topics(["2024-events", "web-events", "2024-events-old"]) == {"2024-events"}
    # a look-ahead is no RE2 syntax (the broker refuses it): the subscription is unknown, not empty
    assert MemberDescription("m", None, None, None, (), "(?=x).*", []).topics(["x"]) is None
