#!/usr/bin/env python3
"""Writes a Claude Code agent trace (Chrome Trace Event JSON, as its tracer writes
`trace-<session>.json`) for a made-up but typical session, deterministically.

The shapes follow the tracer (see SOURCES.md): `M` events naming each agent's process and
thread and linking subagents to their parent (`parent_agent`), then the events in the order
the tracer pushes them: `API Call` begins when the request starts, and its `Request Setup`
(with `Attempt N (retry)` spans), `First Token` and `Sampling` sub-spans and its end are pushed
when the response is complete; `Tool: NAME` spans, which overlap without nesting when tools run
in parallel; `Waiting for User Input`; `Interaction` around each user request; `i` instants
and `C` counters. `ts` is microseconds since the trace start, `metadata.trace_start_time` that
start as an ISO time.

    make_claude_code.py OUT                 the session, finished
    make_claude_code.py OUT --snapshot      the same session as a periodic write catches it:
                                            the last tool and interaction still open
    make_claude_code.py OUT --truncated     a session past the event cap: the oldest events
                                            dropped, a trace_truncated instant in their place
"""

import json
import sys

START = "2025-11-22T08:26:40.000Z"
SESSION = "5f0c3a52-8c1e-4e6a-9d1b-2f7c1a0b9e44"


def djb2(text):
    """The tracer's thread id: a 32-bit djb2 hash of the agent's name, made positive."""
    h = 5381
    for ch in text:
        h = ((h << 5) + h + ord(ch)) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return abs(h) or 1


class Agent:
    def __init__(self, trace, name, pid, parent=None):
        self.trace, self.name, self.pid, self.tid = trace, name, pid, djb2(name)
        meta = trace.meta
        meta.append(dict(name="process_name", cat="__metadata", ph="M", ts=0, pid=pid, tid=0, args={"name": name}))
        meta.append(dict(name="thread_name", cat="__metadata", ph="M", ts=0, pid=pid, tid=self.tid, args={"name": name}))
        if parent:
            meta.append(dict(name="parent_agent", cat="__metadata", ph="M", ts=0, pid=pid, tid=0,
                             args={"parent_agent_id": parent}))

    def push(self, name, cat, ph, ts, args=None):
        event = dict(name=name, cat=cat, ph=ph, ts=ts, pid=self.pid, tid=self.tid)
        if args is not None:
            event["args"] = args
        self.trace.events.append(event)

    def api_call(self, start, setup_ms, attempts_ms, ttft_ms, sampling_ms, tokens):
        """An API call: its begin now, the rest pushed at its end, as the tracer does."""
        args = {"model": "claude-sonnet-4-5", "prompt_tokens": tokens,
                "is_speculative": False, "query_source": "repl_main_thread"}
        self.push("API Call", "api", "B", start, args)
        setup_us = setup_ms * 1000
        end = start + setup_us + (ttft_ms + sampling_ms) * 1000
        if setup_us:
            self.push("Request Setup", "api,setup", "B", start,
                      {"request_setup_ms": setup_ms, "attempt_count": len(attempts_ms) + 1})
            at = start
            for i, ms in enumerate(attempts_ms):
                self.push(f"Attempt {i + 1} (retry)", "api,retry", "B", at, {"attempt": i + 1})
                self.push(f"Attempt {i + 1} (retry)", "api,retry", "E", at + ms * 1000)
                at += ms * 1000
            self.push("Request Setup", "api,setup", "E", start + setup_us)
        first = start + setup_us
        self.push("First Token", "api,ttft", "B", first, {"ttft_ms": ttft_ms, "prompt_tokens": tokens})
        self.push("First Token", "api,ttft", "E", first + ttft_ms * 1000)
        self.push("Sampling", "api,sampling", "B", first + ttft_ms * 1000,
                  {"sampling_ms": sampling_ms, "output_tokens": tokens // 40})
        self.push("Sampling", "api,sampling", "E", end)
        self.push("API Call", "api", "E", end, {**args, "ttft_ms": ttft_ms, "output_tokens": tokens // 40,
                                                  "success": True, "duration_ms": (end - start) / 1000,
                                                  "request_setup_ms": setup_ms})
        return end

    def tool(self, name, start, ms, result_tokens, end_it=True):
        self.push(f"Tool: {name}", "tool", "B", start, {"tool_name": name})
        if end_it:
            self.push(f"Tool: {name}", "tool", "E", start + ms * 1000,
                      {"success": True, "result_tokens": result_tokens})
        return start + ms * 1000


class Trace:
    def __init__(self):
        self.meta, self.events = [], []

    def document(self, agents):
        events = self.meta + self.events
        return {
            "traceEvents": events,
            "metadata": {"session_id": SESSION, "trace_start_time": START, "agent_count": agents,
                         "total_event_count": len(events)},
        }


def session(snapshot):
    trace = Trace()
    main = Agent(trace, "main", 1)
    t = 0
    main.push("Interaction", "interaction", "B", t, {"user_prompt_length": 42})
    t = main.api_call(t + 1_000, setup_ms=1_900, attempts_ms=[800, 1_100], ttft_ms=1_250,
                      sampling_ms=3_400, tokens=18_000)
    main.push("turn_start", "agent", "i", t, {"turn": 1})
    main.push("tokens", "counter", "C", t, {"input": 18_000, "output": 450})
    # Two tools in parallel: they overlap without nesting.
    a = main.tool("Read", t + 200, 1_400, 900)
    b = main.tool("Grep", t + 700, 2_000, 300)
    t = max(a, b)
    t = main.api_call(t + 100, setup_ms=0, attempts_ms=[], ttft_ms=900, sampling_ms=2_100, tokens=21_000)
    # A subagent works while the main agent waits on its Task tool.
    task = t + 300
    main.push("Tool: Task", "tool", "B", task, {"tool_name": "Task"})
    sub = Agent(trace, "code-reviewer", 2, parent=SESSION)
    s = sub.api_call(task + 2_000, setup_ms=600, attempts_ms=[600], ttft_ms=700, sampling_ms=1_800,
                     tokens=9_000)
    s = sub.tool("Bash", s + 100, 4_200, 1_200)
    s = sub.api_call(s + 100, setup_ms=0, attempts_ms=[], ttft_ms=650, sampling_ms=1_300, tokens=11_000)
    sub.push("tokens", "counter", "C", s, {"input": 20_000, "output": 500})
    t = s + 500
    main.push("Tool: Task", "tool", "E", t, {"success": True, "result_tokens": 700})
    t = main.api_call(t + 100, setup_ms=0, attempts_ms=[], ttft_ms=1_100, sampling_ms=2_600, tokens=24_000)
    main.push("Interaction", "interaction", "E", t, {"success": True})
    main.push("Waiting for User Input", "user_input", "B", t + 50)
    t += 50 + 45_000_000
    main.push("Waiting for User Input", "user_input", "E", t, {"decision": "prompt"})
    main.push("Interaction", "interaction", "B", t, {"user_prompt_length": 12})
    t = main.api_call(t + 1_000, setup_ms=0, attempts_ms=[], ttft_ms=800, sampling_ms=1_500, tokens=25_000)
    # The last tool: still running when a periodic write catches the session.
    end = main.tool("Edit", t + 100, 900, 50, end_it=not snapshot)
    if not snapshot:
        t = main.api_call(end + 100, setup_ms=0, attempts_ms=[], ttft_ms=700, sampling_ms=900, tokens=25_500)
        main.push("Interaction", "interaction", "E", t, {"success": True})
    return trace.document(2)


def truncated():
    """A session past the cap: the tracer dropped the oldest events and left a marker, so
    some spans end without their begin."""
    doc = session(snapshot=False)
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    events = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    dropped = events[:20]
    marker = dict(name="trace_truncated", cat="__metadata", ph="i", ts=dropped[-1]["ts"], pid=1, tid=0,
                  args={"dropped_events": len(dropped)})
    doc["traceEvents"] = meta + [marker] + events[20:]
    doc["metadata"]["total_event_count"] = len(doc["traceEvents"])
    return doc


def main():
    out, flags = sys.argv[1], sys.argv[2:]
    doc = truncated() if "--truncated" in flags else session(snapshot="--snapshot" in flags)
    # The tracer writes JSON.stringify output: no spaces, keys in insertion order.
    with open(out, "w") as f:
        f.write(json.dumps(doc, separators=(",", ":")))


if __name__ == "__main__":
    main()
