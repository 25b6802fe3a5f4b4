"""A pasted support-call transcript far larger than a tool result (human-message offloading).

The user pastes the transcript of a long call and asks for the follow-ups; the agent looks up
the orders mentioned and logs follow-ups. Then questions on details said anywhere in the call:
the beginning, the middle, the end. Kept verbatim, every question costs the whole transcript
again; offloaded, the answer must be fetched back from the saved message.
"""

from __future__ import annotations

import random

from evals.scenarios.base import Probe, Scenario, act, call, generation, load_data, rng, slug
from evals.scenarios.text import person
from evals.simulated.plan import Cue
from harness.tokens import TokenCounter
from harness.tools import Tool, tool

NAME = "support-transcript"
CALL_DATE = "2026-02-03"
SYSTEM_PROMPT = """\
You are a customer-support lead's assistant. You read call transcripts, look up the orders \
they mention, and log clear follow-ups in /notes/. Answer questions about calls precisely, \
quoting the transcript."""
# The other speaker's wrong value after each detail: what a careless reader may answer.
DECOY = r"Just so I have it right, not (.+?)\? That was on the old paperwork"


def _slots(r: random.Random, data: dict) -> dict[str, str]:
    """A value for every slot of the detail templates."""
    places = load_data("names/places.yaml")
    return {
        "city": r.choice(places["cities"]),
        "ref": f"{r.choice('BCDFGHKLMNPRST')}{r.choice('XYZW')}-{r.randint(10_000, 99_999)}",
        "weekday": r.choice(data["weekdays"]),
        "day": str(r.randint(4, 9)),
        "phone": f"+31 {r.randint(10, 99)} {r.randint(100, 999)} {r.randint(1000, 9999)}",
        "person": person(r),
        "amount": f"{r.randint(1, 9)},{r.randint(100, 999)}.{r.randint(10, 99)}",
        "count": str(r.randint(12, 96)),
        "because": r.choice(data["becauses"]),
        "team": r.choice(data["teams"]),
        "invoice": str(r.randint(400_000, 499_999)),
        "time": f"{r.randint(15, 18)}:{r.choice(['00', '15', '30', '45'])}",
        "temp": f"-{r.randint(12, 24)}.{r.randint(0, 9)}",
    }


def _decoys(seed: int, data: dict, slots: dict[str, str]) -> dict[str, str]:
    """A wrong value for every slot, never equal to the right one."""
    decoys: dict[str, str] = {}
    for attempt in range(50):
        drawn = _slots(rng(seed, NAME, "decoys", attempt), data)
        for key, value in drawn.items():
            if key not in decoys and value != slots[key]:
                decoys[key] = value
        if len(decoys) == len(slots):
            break
    return decoys


class Call:
    """The generated call: transcript lines with the planted details, and the orders."""

    def __init__(self, seed: int, sizes: dict) -> None:
        data = load_data("support/call.yaml")
        r = rng(seed, NAME, "call")
        self.customer = r.choice(data["customers"])
        self.people = (person(r), person(r))
        self.slots = _slots(r, data)
        self.decoys = _decoys(seed, data, self.slots)
        self.details = data["details"][: sizes["details"]]
        self.orders = [f"SO-{r.randint(200_000, 299_999)}" for _ in range(sizes["orders"])]
        self.seed = seed
        self.lines = self._transcript(r, data, sizes["transcript_tokens"])

    def _transcript(self, r: random.Random, data: dict, tokens: int) -> list[str]:
        counter = TokenCounter()
        names = {"customer": self.people[0], "agent": self.people[1]}
        lines: list[str] = []
        seconds, used = 0, 0
        speaker = "agent"
        while used < tokens:
            speaker = "customer" if speaker == "agent" else "agent"
            sentences = [r.choice(data["filler"][speaker]) for _ in range(r.randint(1, 3))]
            if r.random() < 0.15:
                sentences.append(f"This is about order {r.choice(self.orders)}.")
            seconds += r.randint(4, 40)
            line = (
                f"[{_clock(seconds)}] {speaker.title()} ({names[speaker]}): {' '.join(sentences)}"
            )
            lines.append(line)
            used += counter.count_text(line) + 1
        # Details at spread positions (start, middle, end), each followed by the other speaker
        # naming a wrong value, which a careless reader may take for the answer.
        n = len(self.details)
        for k, detail in enumerate(self.details):
            at = int((k + r.uniform(0.2, 0.8)) * (len(lines) - 1) / n)
            who = detail["speaker"]
            other = "agent" if who == "customer" else "customer"
            said = detail["line"].format(**self.slots)
            decoy = self.decoys[detail["answer"]]
            lines[at] = f"{_stamp(lines[at])} {who.title()} ({names[who]}): {said}"
            lines[at + 1] = (
                f"{_stamp(lines[at + 1])} {other.title()} ({names[other]}): Just so I have it "
                f"right, not {decoy}? That was on the old paperwork."
            )
        return lines

    def text(self) -> str:
        return "\n".join(self.lines)

    def order(self, order_id: str) -> str:
        r = rng(self.seed, NAME, "order", order_id)
        products = load_data("names/places.yaml")["products"]
        items = [
            f"  - {r.randint(2, 40)} x {r.choice(products)} @ {r.randint(40, 900)}.00 EUR, "
            f"status {r.choice(['delivered', 'in transit', 'back-ordered', 'returned'])}"
            for _ in range(r.randint(6, 14))
        ]
        return (
            f"Order {order_id} for {self.customer}\nPlaced 2026-01-{r.randint(5, 28):02d}, "
            f"ship-to: {r.choice(load_data('names/places.yaml')['cities'])} depot\nLines:\n"
            + "\n".join(items)
        )


def _stamp(line: str) -> str:
    return line.split(" ", 1)[0]


def _clock(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def make_tools(call_: Call) -> tuple[Tool, ...]:
    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order: its lines, quantities, prices and statuses.

        Args:
            order_id: The order number, e.g. "SO-123456".
        """
        if order_id not in call_.orders:
            return f"Error: no order {order_id!r} on this account."
        return call_.order(order_id)

    return (lookup_order,)


def build(seed: int = 0, scale: str = "full") -> Scenario:
    """Generate the scenario for `seed` at `scale` ("small" or "full")."""
    g = generation(NAME, seed, scale)
    c = Call(seed, g.extra)
    notes = f"/notes/call-{slug(c.customer)}.md"
    weekday = c.slots["weekday"]
    script = g.script()
    script.session("call")
    prompt = (
        f"Transcript of the support call with {c.customer}, {CALL_DATE} (pasted below). Log the "
        f"follow-ups in /notes/ and check the orders it mentions.\n\n{c.text()}"
    )
    followups = "\n".join(f"- Check order {o} line by line with the customer." for o in c.orders)
    script.turn(
        prompt,
        (act("Looking up the orders mentioned in the call.",
             *(call("lookup_order", order_id=o) for o in c.orders)),
         act(f"Saving the follow-ups for {c.customer} to {notes}.",
             call("write_file", file_path=notes,
                  content=f"# Follow-ups: {c.customer}, {CALL_DATE}\n\n{followups}\n"))),
        f"Logged {len(c.orders)} follow-ups in {notes}. Next step: call {c.customer} back on "
        f"{weekday} to confirm the replacement.",
    )  # fmt: skip
    probes = []
    for k, d in enumerate(c.details):
        decoy = c.decoys[d["answer"]]
        probes.append(
            Probe(f"detail-{k:02d}", d["kind"], d["question"], c.slots[d["answer"]],
                  Cue(patterns=(d["pattern"],), lookalikes=(DECOY,)), planted=f"line {k}",
                  distractors=(decoy,), source="user")
        )  # fmt: skip
    r = rng(seed, NAME, "order-of-questions")
    r.shuffle(probes)
    half = len(probes) // 2
    for p in probes[:half]:
        script.ask(p)
    script.turn(
        f"Also check order {c.orders[-1]} again: the customer says a line is missing.",
        (act("Looking the order up again.", call("lookup_order", order_id=c.orders[-1])),),
        f"Order {c.orders[-1]} shows every line; I will raise it on the call-back. Next step: call "
        f"{c.customer} back on {weekday} to confirm the replacement.",
    )  # fmt: skip
    for p in probes[half:]:
        script.ask(p)
    script.ask(Probe("notes-path", "artifact", "Where did you log the follow-ups for this call?",
                     notes, Cue(patterns=(r"follow-ups for .+? to (/notes/\S+\.md)",)),
                     planted="follow-ups", source="agent"))  # fmt: skip
    nxt = Cue(patterns=(r"Next step: (call .+? back on \w+)",))
    question = "What is your next step on this case?"
    answer = f"call {c.customer} back on {weekday}"
    script.ask(
        Probe("next", "continuation", question, answer, nxt, planted="follow-ups", source="agent")
    )
    return g.scenario(
        script, tools=make_tools(c), system_prompt=SYSTEM_PROMPT, max_steps=20,
        data_files=lambda: {"transcript.txt": c.text() + "\n"},
    )  # fmt: skip


def transcript_tokens(scenario: Scenario) -> int:
    """Tokens of the pasted message (the first user turn)."""
    return TokenCounter().count_text(scenario.sessions[0].turns[0].text)
