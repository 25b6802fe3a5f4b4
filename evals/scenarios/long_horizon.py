"""Long-horizon ticket triage: hundreds of small steps, the window refilled several times.

The agent works through a support queue one ticket per step, noting each outcome, escalating a
few with a reason, and saving batch notes to files. Facts from the first tickets are asked
about much later, after several summarization cycles: the refunds it approved (noted), the
site codes the tickets gave (never noted), why it escalated (decisions), where batch notes went
(artifacts), and which tickets come next (continuation).
"""

from __future__ import annotations

import random

from evals.scenarios.base import Probe, Scenario, act, call, generation, load_data, rng
from evals.scenarios.text import person
from evals.simulated.plan import Cue
from harness.tools import Tool, tool

NAME = "long-horizon"
SYSTEM_PROMPT = """\
You triage the support queue: fetch each ticket, decide the resolution, note it in one line, \
escalate what needs a second pair of eyes (with the reason), and save each batch's notes to \
/notes/."""
NEXT = Cue(patterns=(r"Next step: ([^.\n]+)",))


class Queue:
    """The tickets, and what the agent decided for each."""

    def __init__(self, seed: int, sizes: dict) -> None:
        data = load_data("tickets/tickets.yaml")
        places = load_data("names/places.yaml")
        r = rng(seed, NAME, "tickets")
        self.sizes = sizes
        self.tickets: dict[int, str] = {}
        self.notes: dict[int, str] = {}
        self.codes: dict[int, str] = {}
        self.refunds: dict[int, tuple[str, str]] = {}  # ticket -> (order, amount)
        self.escalations: dict[int, str] = {}
        self.slots: dict[int, tuple[tuple[str, Cue], ...]] = {}
        n = sizes["tickets"]
        # Every ticket its own order number, so a question about an order is unambiguous.
        orders = r.sample(range(70_000, 100_000), n)
        for t in range(1, n + 1):
            self.codes[t] = f"{r.choice('ABCDEFGHJKLMNPRSTUVWXYZ')}{r.randint(100, 999)}"
            issue = r.randrange(len(data["issues"]))
            order = str(orders[t - 1])
            refund = ""
            if t % 7 == 3:
                refund = f"{r.randint(20, 900)}.{r.randint(0, 99):02d}"
                self.refunds[t] = (order, refund)
            self.tickets[t] = self._ticket(r, t, order, data, places, issue, refund)
            if refund:
                # What the agent approves is what the ticket shows it: read at replay time.
                self.notes[t] = (
                    f"Ticket #{t}: refund of {{{{amount_{t}}}}} EUR approved for order "
                    f"{{{{order_{t}}}}}."
                )
                self.slots[t] = (
                    (f"amount_{t}", Cue(patterns=(
                        rf"Ticket #{t} \|[^\n]*\| refund requested: ([0-9]+\.[0-9]+) EUR",
                        rf"Ticket #{t}: refund of ([0-9]+\.[0-9]+) EUR"))),
                    (f"order_{t}", Cue(patterns=(
                        rf"Ticket #{t} \|[^\n]*? order ([0-9]+) \|",
                        rf"Ticket #{t}: refund of [0-9.]+ EUR approved for order ([0-9]+)"))),
                )  # fmt: skip
            elif t % 11 == 5:
                self.escalations[t] = r.choice(data["escalation_reasons"])
                self.notes[t] = f"Ticket #{t}: escalated to tier 2 because {self.escalations[t]}."
            else:
                self.notes[t] = f"Ticket #{t}: {data['resolutions'][issue]}."

    def _ticket(
        self, r: random.Random, t: int, order: str, data: dict, places: dict, issue: int,
        refund: str,
    ) -> str:  # fmt: skip
        product = r.choice(places["products"])
        head = (
            f"Ticket #{t} | customer {person(r)} | order {order} | site code {self.codes[t]} | "
            f"opened 2026-03-{1 + t % 28:02d}"
        ) + (f" | refund requested: {refund} EUR" if refund else "")
        problem = data["issues"][issue].format(product=product, count=r.randint(2, 30))
        details = [r.choice(data["details"]) for _ in range(self.sizes["ticket_sentences"])]
        return f"{head}\nProblem: {problem}.\n" + "\n".join(details)


def make_tools(queue: Queue) -> tuple[Tool, ...]:
    @tool
    def get_ticket(ticket_id: int) -> str:
        """Fetch a ticket from the queue.

        Args:
            ticket_id: The ticket number.
        """
        return queue.tickets.get(ticket_id, f"Error: no ticket #{ticket_id}.")

    return (get_ticket,)


def build(seed: int = 0, scale: str = "full") -> Scenario:
    """Generate the scenario for `seed` at `scale` ("small" or "full")."""
    g = generation(NAME, seed, scale)
    q = Queue(seed, g.extra)
    n, batch = g.sizes.get("tickets"), g.sizes.get("batch")
    batches = [(b, min(b + batch - 1, n)) for b in range(1, n + 1, batch)]
    probes = _probes(q, n, len(batches), rng(seed, NAME, "probes"))
    script = g.script()
    script.session("queue")
    for k, (first, last) in enumerate(batches):
        path = f"/notes/batch-{k + 1:02d}.md"
        steps = [
            act(q.notes[t - 1] if t > first else f"Starting batch {k + 1}.",
                call("get_ticket", ticket_id=t), slots=q.slots.get(t - 1, ()) if t > first else ())
            for t in range(first, last + 1)
        ]  # fmt: skip
        body = "\n".join(f"- {q.notes[t]}" for t in range(first, last + 1))
        content = f"# Batch {k + 1}\n\n{body}\n"
        read = tuple(s for t in range(first, last + 1) for s in q.slots.get(t, ()))
        steps.append(act(f"{q.notes[last]} Saving the batch {k + 1} notes to {path}.",
                         call("write_file", file_path=path, content=content),
                         slots=read))  # fmt: skip
        nxt = (f"triage tickets {batches[k + 1][0]}-{batches[k + 1][1]}"
               if k + 1 < len(batches) else "close the queue review")  # fmt: skip
        done = f"Batch {k + 1} done ({last - first + 1} tickets). Next step: {nxt}."
        script.turn(f"Triage tickets {first}-{last} from the queue.", tuple(steps), done)
        for p in probes.get(k, []):
            script.ask(p)
        if k % 2 == 1:  # a status check every other batch
            script.ask(Probe(f"next-{k + 1:02d}", "continuation",
                             f"Status check {k + 1}: what is your next step?", nxt, NEXT,
                             planted=f"batch {k + 1}", source="agent"))  # fmt: skip
    return g.scenario(
        script, tools=make_tools(q), system_prompt=SYSTEM_PROMPT, max_steps=batch + 20,
        data_files=lambda: {"tickets.txt": "\n\n".join(q.tickets.values()) + "\n"},
    )  # fmt: skip


def _probes(q: Queue, n: int, batches: int, r: random.Random) -> dict[int, list[Probe]]:
    """Facts from the first fifth of the queue, each asked in a later batch (by index)."""
    early = n // 5
    asked: dict[int, list[Probe]] = {}

    def later() -> int:
        return r.randint(max(1, batches // 2), batches - 1)

    for t in [t for t in q.refunds if t <= early][:6]:
        order, amount = q.refunds[t]
        cue = Cue(patterns=(rf"refund of ([0-9]+\.[0-9]+) EUR approved for order {order}\b",
                            rf"order {order} \|[^\n]*\| refund requested: ([0-9]+\.[0-9]+) EUR"),
                  lookalikes=(r"refund of ([0-9]+\.[0-9]+) EUR approved for order (?!"
                              + order + r"\b)",))  # fmt: skip
        others = tuple(a for o, a in q.refunds.values() if o != order)
        asked.setdefault(later(), []).append(
            Probe(f"refund-{t:03d}", "recall", f"How much did we refund on order {order}?",
                  amount, cue, planted=f"ticket {t}", distractors=others))  # fmt: skip
    for t in r.sample(range(1, early + 1), min(5, early)):
        cue = Cue(patterns=(rf"Ticket #{t} \|[^\n]*? site code ([A-Z0-9]+)",),
                  lookalikes=(rf"Ticket #{t}[0-9] \|[^\n]*? site code ([A-Z0-9]+)",))  # fmt: skip
        asked.setdefault(later(), []).append(
            Probe(f"site-{t:03d}", "recall", f"Which site code did ticket #{t} give?",
                  q.codes[t], cue, planted=f"ticket {t}"))  # fmt: skip
    for t in [t for t in q.escalations if t <= early][:4]:
        cue = Cue(
            patterns=(rf"Ticket #{t}: escalated to tier 2 because ([^.]+)\.",),
            lookalikes=(r"Ticket #[0-9]+: escalated to tier 2 because ([^.]+)\.",),
        )
        others = tuple(sorted(set(q.escalations.values()) - {q.escalations[t]}))
        asked.setdefault(later(), []).append(
            Probe(f"escalation-{t:03d}", "decision", f"Why was ticket #{t} escalated?",
                  q.escalations[t], cue, planted=f"ticket {t}", distractors=others,
                  source="agent"))  # fmt: skip
    for k in range(1, min(3, batches) + 1):
        cue = Cue(patterns=(rf"Saving the batch {k} notes to (/\S+\.md)",))
        asked.setdefault(later(), []).append(
            Probe(f"batch-file-{k:02d}", "artifact", f"Which file holds the notes of batch {k}?",
                  f"/notes/batch-{k:02d}.md", cue, planted=f"batch {k}",
                  source="agent"))  # fmt: skip
    return asked
