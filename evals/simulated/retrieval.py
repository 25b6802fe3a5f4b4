"""How the simulated model (evals/simulated/model.py) answers a question: read the request,
and when the fact is not found there, retrieve (grep the saved files the request names, or
run an earlier domain lookup again) within the reader's budgets, or say "I don't know"."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.simulated.cursor import Cursor
from evals.simulated.plan import Answer
from evals.simulated.queries import grep_query, is_lookup, lookups, pointers, signature
from evals.simulated.reader import DONT_KNOW, ReaderConfig, RequestReader, occurrences
from evals.simulated.request import earlier_size, offloaded_to
from evals.simulated.shapes import role_query, search_terms
from evals.simulated.sightings import BY_ROLE, Role, Rules, sightings
from harness.messages import Message, ModelResponse
from harness.tokens import TokenCounter


@dataclass
class Retrievals:
    """The retrieval calls a model made: `ids` all of them, `recall_ids` those that re-ran a
    domain lookup (both are billed as retrievals and kept in checkpoints)."""

    counter: TokenCounter
    # The questions the plan asks: user messages, but no source of any value.
    questions: frozenset[str] = frozenset()
    # The import's rules for a value's role (evals/sources/role_rules.py): without them an
    # imported probe is read by its cue alone.
    rules: Rules | None = None
    ids: set[str] = field(default_factory=set)
    recall_ids: set[str] = field(default_factory=set)

    def answer(
        self,
        config: ReaderConfig,
        window: int | None,
        cursor: Cursor,
        step: Answer,
        reader: RequestReader,
        messages: Sequence[Message],
        offered: set[str],
    ) -> ModelResponse:
        # A re-run result is a new reading: its draws are its own, keyed by how many lookups
        # this question re-ran (never by what the earlier reading found).
        again = f":r{len(cursor.recalled)}" if cursor.recalled else ""
        found, source = self.by_role(step, reader, messages)
        reading = reader.read(step.cue, f"{step.id}:{cursor.rounds}{again}", found)
        if reading.value is not None:
            cursor.step += 1
            return ModelResponse(text=reading.value)
        # A probe named by role searches with the role (its terms, the value's shape), never
        # with the question's wording (which may cite steps no saved file mentions).
        terms = search_terms(step.kind, step.terms)
        question = " ".join(terms) if terms else cursor.turn.prompt

        def query(round_: int) -> str | None:
            if terms:
                return role_query(terms, step.shape, round_)
            return grep_query(question, round_)

        budget = config.max_retrievals - cursor.retrievals
        if cursor.turns >= config.max_rounds:
            budget = 0  # every retrieval turn of this question is spent
        rerun, cursor.recall = cursor.recall, None
        if budget > 0 and rerun is not None:
            # The lookup just re-run was offloaded in turn: search its saved copy.
            saved = offloaded_to(messages, rerun)
            pattern = query(0)
            if saved is not None and pattern is not None:
                return self.grep(config, cursor, [saved], pattern)
        pattern = query(cursor.rounds)
        if budget > 0 and pattern is not None and not cursor.recalled:
            # The first search spreads over the likeliest files; a narrower second one goes
            # to the likeliest file alone.
            width = max(budget - 1, 1) if cursor.rounds == 0 else 1
            targets = pointers(reader.texts, question)[:width]
            if targets:
                cursor.rounds += 1
                return self.grep(config, cursor, targets, pattern)
        if budget > 0:
            # Nothing saved to search, or the search came back empty: run a lookup again.
            seen = [(c.name, c.arguments) for m in messages for c in m.tool_calls]
            room = None if window is None else window - reader.tokens
            # The best-ranked lookup that fits; sizes are counted only until one does.
            ranked = lookups(seen, question, offered)
            if source is not None and source[0] in offered and is_lookup(*source):
                # The value was in view under its role, and missed: read that source again.
                ranked = [source, *(c for c in ranked if signature(*c) != signature(*source))]
            fresh = next(
                (
                    (name, args)
                    for name, args in ranked
                    if signature(name, args) not in cursor.recalled
                    and (room is None or earlier_size(self.counter, messages, name, args) < room)
                ),
                None,
            )
            if fresh is not None:
                name, args = fresh
                cursor.recalled.append(signature(name, args))
                cursor.retrievals += 1
                cursor.turns += 1
                response = cursor.call(f"Checking {name} again for this.", [fresh])
                cursor.recall = response.tool_calls[0].id
                self.ids.add(cursor.recall)
                self.recall_ids.add(cursor.recall)
                return response
        cursor.step += 1
        return ModelResponse(text=DONT_KNOW)

    def by_role(
        self, step: Answer, reader: RequestReader, messages: Sequence[Message]
    ) -> tuple[list[tuple[int, str]], tuple[str, dict[str, Any]] | None]:
        """(offset in the reader's texts, value) where a source in view shows the value under
        the probe's role, the newest first, and the call that made the newest such source (a
        tool's result; None for a user's message); none for a probe without a role."""
        if self.rules is None or step.kind not in BY_ROLE or not step.phrase:
            return [], None
        role = Role(step.kind, step.phrase, step.terms, step.shape)
        seen = sightings(self.rules, role, messages, self.questions)
        if len({s.value for s in seen}) > 1:
            # The role names more than one value in view ("the `user_id` the user gave", of
            # two ids the user wrote): those the cue reads too are meant.
            cued = {v for _, v in occurrences(step.cue.patterns, reader.texts)}
            seen = [s for s in seen if s.value in cued] or seen
        # The reader's texts are the system prompt, then one per message.
        starts = list(itertools.accumulate((len(t) for t in reader.texts), initial=0))
        hits = [(starts[s.message + 1] + s.offset, s.value) for s in seen]
        if not seen:
            return hits, None
        wanted = messages[seen[0].message].tool_call_id or ""
        # The last call under that id (as a map of every call by id would hold), looked for
        # alone: a request's calls are many, and only the newest source's is asked for.
        call = next(
            (c for m in reversed(messages) for c in reversed(m.tool_calls) if c.id == wanted),
            None,
        )
        return hits, None if call is None else (call.name, dict(call.arguments))

    def grep(
        self, config: ReaderConfig, cursor: Cursor, paths: Sequence[str], pattern: str
    ) -> ModelResponse:
        cursor.retrievals += len(paths)
        cursor.turns += 1
        args = {"pattern": pattern, "regex": True, "output_mode": "content",
                "max_count": config.grep_results}  # fmt: skip
        calls = [("grep", {**args, "path": p}) for p in paths]
        response = cursor.call("Searching the saved files for it.", calls)
        self.ids.update(c.id for c in response.tool_calls)
        return response
