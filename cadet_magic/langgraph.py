"""``build_graph(con, model=..., **options)``: the agent as a LangGraph graph (edge: langgraph).

The graph's nodes are the pipeline's own steps, taken from the phases the agent runs
(:data:`cadet_magic.agent.phases.PHASES`): ``read_schema``, then for each phase its declared
steps (``sql.generate``, ``sql.check``, ``sql.execute``, ``sql.check_result``, the vote's
``vote.tally``, the fallback's ``fallback.run_code`` ...) and its control steps
(``sql.diagnose``, ``sql.next_attempt``, ``sql.hand_over``, ``sql.finish``), each node calling
the step's own function (:func:`cadet_magic.agent.pipeline.node`); its conditional
edges are the pipeline's routes (:func:`cadet_magic.agent.routes.route`), each edge's possible
ends read from the phase's declaration. ``answer`` turns the final state into the
:class:`~cadet_magic.result.AskResult` as ``ask()`` does. Nothing of the loop is written again
here: the graph runs the same steps through the same routes as :func:`cadet_magic.ask`, and
gives the same attempts and answer.

Input ``{"question": ...}``; the final state holds the result under ``"result"``. When the
answer asks the user to choose between readings of the question (``AskResult.asks``), the
``choose`` node calls LangGraph's ``interrupt()`` with the readings; ``Command(resume=i)``
answers with reading ``i`` (``AskResult.choose(i)``). A checkpointer and a ``thread_id`` work
as LangGraph documents them. A checkpoint keeps the question and the result, as plain data
(:mod:`cadet_magic.result_plain`; the DataFrame is made again from the rows when it is read
back); the run's state between two steps holds the parsed SQL, the runner and the model, so it
lives only in memory while the run goes on (LangGraph's ``UntrackedValue``): a run stopped
between two steps starts over when invoked again, and an interrupt resumes from the result.

Example:
    >>> import sqlite3
    >>> from cadet_magic.llm import ScriptedModel
    >>> con = sqlite3.connect(":memory:")
    >>> _ = con.execute("CREATE TABLE t (x INT)"); _ = con.execute("INSERT INTO t VALUES (2), (3)")
    >>> m = ScriptedModel({"Total?": ["```sql\\nSELECT sum(x) AS s FROM t\\n```"]})
    >>> graph = build_graph(con, model=m)
    >>> out = graph.invoke({"question": "Total?"})
    >>> out["result"].rows, [str(a.outcome) for a in out["result"].attempts]
    ([(5,)], ['ok'])
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langgraph.channels.last_value import LastValue
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from cadet_magic.agent import pipeline, routes, steps
from cadet_magic.agent.inputs import RunInputs
from cadet_magic.agent.phase_spec import PhaseSpec, after, named
from cadet_magic.agent.phases import PHASES
from cadet_magic.agent.state import AskState, initial_state
from cadet_magic.errors import ConfigurationError
from cadet_magic.kinds import StepName
from cadet_magic.options import CANDIDATES_DEFAULT, UNSET, AskOptions, merged
from cadet_magic.result import AskResult
from cadet_magic.result_plain import from_plain, to_plain

__all__ = ["GraphState", "build_graph", "node_name"]

#: The control steps every phase has besides its declared ones (the pipeline's).
CONTROL = (StepName.diagnose, StepName.next_attempt, StepName.hand_over, StepName.finish)
#: Marks a result kept as plain data in a checkpoint.
_PLAIN_KEY = "cadet_magic.AskResult"


def node_name(phase: str, step: str) -> str:
    """The node of ``step`` in ``phase``: ``"sql.generate"``."""
    return f"{phase}.{step}"


def plain_result(result: AskResult) -> dict[str, Any]:
    """``result`` as the ``result`` channel is written and checkpointed: plain data (every
    write of a node is stored by a checkpointer, before the channel holds it)."""
    return {_PLAIN_KEY: to_plain(result)}


def _restored(value: Any) -> Any:
    """A result written or checkpointed as plain data, as an :class:`AskResult` again (its
    DataFrame made from its rows, as ``ask()`` makes it)."""
    if not (isinstance(value, dict) and _PLAIN_KEY in value):
        return value
    from cadet_magic.api import to_dataframe

    result = from_plain(AskResult, value[_PLAIN_KEY])
    return dataclasses.replace(result, df=to_dataframe(result))


class ResultValue(LastValue):
    """The ``result`` channel: written and checkpointed as plain data
    (:func:`plain_result`), held and read as an :class:`AskResult`."""

    def update(self, values: Any) -> bool:
        return super().update([_restored(v) for v in values])

    def checkpoint(self) -> Any:
        if not self.is_available() or not isinstance(self.get(), AskResult):
            return super().checkpoint()
        return plain_result(self.get())

    def from_checkpoint(self, checkpoint: Any) -> ResultValue:
        return super().from_checkpoint(_restored(checkpoint))


@dataclass
class Setup:
    """What the run's steps need besides its state, made by ``read_schema`` for each
    question as ``ask()`` makes it: the steps' context (the model, the runner, the prompts
    sent), the options asked with, the prompt's context (follow-up, examples), the run's
    inputs (the model's label, what the provenance records) and when the run began."""

    ctx: steps.Context
    options: AskOptions
    prompt: Any
    inputs: RunInputs
    started: float


class GraphInput(TypedDict):
    """What the graph is invoked with."""

    question: str


class GraphOutput(TypedDict, total=False):
    """What ``invoke`` returns: the question and its :class:`AskResult`."""

    question: str
    result: AskResult


class GraphState(TypedDict, total=False):
    """The graph's state: the ``question`` (input), the ``result`` (output), and while the
    run goes on, the pipeline's own state (``run``) and what its steps need (``setup``), kept
    in memory only."""

    question: str
    result: Annotated[AskResult, ResultValue(AskResult)]
    run: Annotated[AskState, UntrackedValue(AskState)]
    setup: Annotated[Setup, UntrackedValue(Setup)]


# -- where each node's routes may lead (read from the phases' declarations) ---------------------


def _first_steps(phase: PhaseSpec) -> list[StepName]:
    """The steps a new attempt of ``phase`` may start with: up to the first that applies to
    an attempt that has just begun."""
    fresh = initial_state("", target=None).replace(phase=phase.name, work=phase.attempt.begin(1))
    out: list[StepName] = []
    for s in phase.steps:
        out.append(s.name)
        if s.when(fresh):
            break
    return out


def ends(phase: PhaseSpec, step: StepName) -> list[str]:
    """The nodes the route after ``step`` of ``phase`` may lead to."""

    def own(name: str) -> str:
        return node_name(phase.name, name)

    if step == StepName.read_schema:
        return [own(s) for s in _first_steps(phase)]
    if step == StepName.finish:
        return ["answer"]
    if step == StepName.next_attempt:
        return [own(s) for s in _first_steps(phase)]
    if step == StepName.hand_over:
        return [node_name(p.name, s) for p in after(PHASES, phase) for s in _first_steps(p)]
    tail = [
        own(StepName.next_attempt),
        *([own(StepName.hand_over)] if after(PHASES, phase) else []),
        own(StepName.finish),
    ]
    if step == StepName.diagnose:
        return tail
    names = phase.names()
    return [own(s) for s in names[names.index(step) + 1 :]] + [own(StepName.diagnose), *tail]


def _router(phase: PhaseSpec, step: StepName) -> Callable[[GraphState], str]:
    """The route after ``step`` of ``phase`` (:func:`cadet_magic.agent.routes.route`), as the
    node it leads to (a hand-over leads into the phase the state is in now)."""

    def route(state: GraphState) -> str:
        run = state["run"]
        nxt = routes.route(PHASES, phase, step, run)
        return "answer" if nxt == StepName.end else node_name(run.phase, nxt)

    route.__name__ = f"route_after_{phase.name}_{step}"
    return route


def _step_node(phase: PhaseSpec, step: StepName) -> Any:
    """The node running ``step`` of ``phase``: the pipeline's own function for it."""
    from cadet_magic.agent.run import _anticipate

    run = pipeline.node(PHASES, phase, step)

    def node(state: GraphState) -> dict[str, Any]:
        setup = state["setup"]
        done = run(state["run"], setup.ctx)
        _anticipate(PHASES, step, done, phase, setup.ctx)  # the fallback's worker starts early
        return {"run": done}

    node.__name__ = f"{phase.name}_{step}"
    return node


# -- the graph ----------------------------------------------------------------------------------


def build_graph(
    con: Any = None,
    model: Any = UNSET,
    *,
    checkpointer: Any = None,
    namespace: dict | None = None,
    code_runner: Callable[..., Any] | None = None,
    metrics: Any = None,
    **options: Any,
) -> Any:
    """The agent as a compiled LangGraph ``StateGraph`` answering questions about ``con``
    (any connection :func:`cadet_magic.ask` takes, DataFrames included, resolved for each
    question) with ``model``.

    ``options`` are :class:`~cadet_magic.options.AskOptions` keywords, checked now (an unknown
    one is a ``TypeError``); ``checkpointer`` is passed to ``compile`` (a thread's result and
    the readings interrupt need one); ``namespace``, ``code_runner`` and ``metrics`` are
    ``ask()``'s. Invoke it with ``{"question": ...}``; the result is under ``"result"``.
    """
    opts = merged(None, model=model, **options)
    if opts.rerun:
        raise ConfigurationError(
            "build_graph: rerun is not a graph's; call cadet_magic.rerun(result, con)."
        )
    first = PHASES[0]

    def read_schema(state: GraphState) -> dict[str, Any]:
        setup, run = _begin(state["question"], con, opts, namespace, code_runner, first)
        return {"run": steps.read_schema(run, setup.ctx), "setup": setup}

    def answer(state: GraphState) -> dict[str, Any]:
        return {"result": plain_result(_answer(state["run"], state["setup"], metrics))}

    graph = StateGraph(GraphState, input_schema=GraphInput, output_schema=GraphOutput)
    graph.add_node(StepName.read_schema, read_schema)
    graph.add_edge(START, StepName.read_schema)
    graph.add_conditional_edges(
        StepName.read_schema,
        _router(first, StepName.read_schema),
        ends(first, StepName.read_schema),
    )
    for phase in PHASES:
        for step in (*phase.names(), *CONTROL):
            name = node_name(phase.name, step)
            graph.add_node(name, _step_node(phase, step))
            graph.add_conditional_edges(name, _router(phase, step), ends(phase, step))
    graph.add_node("answer", answer)
    graph.add_node("choose", choose)
    graph.add_conditional_edges("answer", _asks, ["choose", END])
    graph.add_edge("choose", END)
    # every step is a LangGraph step: as many as the run's own loop allows itself
    limit = 20 * (opts.max_attempts + (opts.candidates or CANDIDATES_DEFAULT) + 2) + 5
    return graph.compile(checkpointer=checkpointer).with_config(recursion_limit=limit)


def _begin(
    question: str,
    con: Any,
    opts: AskOptions,
    namespace: dict | None,
    code_runner: Callable[..., Any] | None,
    first: PhaseSpec,
) -> tuple[Setup, AskState]:
    """The run's model, runner, prompt context and first state, made as ``ask()`` and
    ``run_agent`` make them (the connection resolved now: DataFrames registered afresh)."""
    from cadet_magic.api import prompt_context
    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.llm import is_scripted, load_model
    from cadet_magic.llm.sampling import sampler_for
    from cadet_magic.runner import target_of
    from cadet_magic.vote.default_size import candidates_for

    started = time.perf_counter()
    chat_model = load_model(
        opts.model,
        namespace,
        api_key=opts.api_key,
        base_url=opts.base_url,
        timeout=opts.model_timeout,
        temperature=opts.temperature,
    )
    runner = resolve_runner(con)
    prompt = prompt_context(question, runner, opts, None)
    scripted = is_scripted(chat_model)
    ctx = steps.Context(
        model=chat_model,
        runner=runner,
        schema=prompt.schema,
        code_runner=code_runner,
        preamble=prompt.preamble,
        sampler=sampler_for(chat_model) if (opts.candidates or 2) > 1 else None,
    )
    state = initial_state(
        question,
        target=target_of(runner),
        connection=getattr(runner, "label", ""),
        options=candidates_for(opts, scripted),
    )
    state = state.replace(phase=first.name, work=first.attempt.begin(1))
    return Setup(ctx, opts, prompt, prompt.inputs(opts, chat_model), started), state


def _answer(state: AskState, setup: Setup, metrics: Any) -> AskResult:
    """The final state as ``ask()``'s result: its record, provenance, cost, DataFrame and its
    count in the session's metrics."""
    from cadet_magic.agent.run import to_result
    from cadet_magic.api import _finish, confirm

    elapsed = time.perf_counter() - setup.started
    result = to_result(state, named(PHASES, state.phase), setup.ctx, elapsed, setup.inputs)
    result = confirm(result, setup.prompt)
    return _finish(result, setup.options, metrics)


def _asks(state: GraphState) -> str:
    """``choose`` when the answer asks the user to choose a reading, else the end."""
    return "choose" if getattr(state["result"], "asks", False) else END


def choose(state: GraphState) -> dict[str, Any]:
    """LangGraph's ``interrupt()`` with the readings (their SQL, what each computes, its
    votes and its first rows); ``Command(resume=i)`` makes reading ``i`` the answer."""
    from cadet_magic.answer_record import answer_record

    result = state["result"]
    record = answer_record(result, str(result.provenance.get("share") or "samples"))
    choice = interrupt({"question": result.question, "readings": record["readings"]})
    return {"result": plain_result(result.choose(int(choice)))}
