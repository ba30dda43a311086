"""Two `toolbox mcp --http` workers sharing one Redis, behind haproxy, as the official Python MCP
SDK sees them.

Usage:
    python workers_client.py BALANCER_URL WORKER1_URL WORKER2_URL WORKER1_PID
    python workers_client.py down WORKER_URL STORE_URL
    python workers_client.py retries BALANCER_URL REDIS_PID WORKER1_PID
    python workers_client.py edits WORKER1_URL WORKER2_URL

The second form checks a worker whose Redis is down: `read` works, `todo_read` answers an error
naming the store at STORE_URL. The third sends 100 `todo_append` calls, each with an
`idempotency_key` of its own; Redis is stopped (SIGSTOP) in the middle of a batch of them for
longer than the workers wait for a Redis reply, worker 1 is killed (SIGKILL) while its calls of
that batch wait, and Redis is continued (SIGCONT); every call that failed is sent again with the
same key until it succeeds, and every item is in the plan exactly once. The fourth sends 20
`edit` calls of one file (`edits.txt`, lines `line 0` to `line 19`), all at once, the even ones to
worker 1 and the odd ones to worker 2, each upper-casing its own line: the resource lock each
`edit` takes in the shared Redis makes them run one after the other, so none is lost.

Run by `toolbox/tests/workers.rs`, which starts redis-server, the two workers (both with
`--store redis://...` and `--session plan-1`) and haproxy (round-robin), and reads the workers'
logs afterwards to see which worker served which call. Prints one line per check and exits 0; a
failed check raises (non-zero exit, traceback on stderr). Exits 3 with a message naming
`scripts/test.sh` when the `mcp` package is missing. Every wait and loop is bounded; nothing is
timed. The last check kills worker 1 with SIGKILL half way through its calls.
"""

import os
import re
import signal
import sys

try:
    import anyio
    from mcp import Client, types
except ImportError as error:
    print(
        f"the Python MCP SDK is missing ({error}); run scripts/test.sh, which creates "
        "target/conformance-venv with it and exports TOOL_CONFORMANCE_PYTHON",
        file=sys.stderr,
    )
    sys.exit(3)

# The bound on every wait, in seconds (a broken setup fails here instead of hanging the suite).
BOUND = 240
# How often a failed call is tried again, at most.
RETRIES = 5
ITEM = re.compile(r"^\d+\. \[.\] \[[^\]]+\] \(p\d\) (.*)$")


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


def items_of(plan: str) -> list[str]:
    """The contents of a rendered plan's items, in order."""
    return [m.group(1) for line in plan.splitlines() if (m := ITEM.match(line))]


def pending(content: str) -> dict:
    return {"content": content, "status": "pending"}


async def one_plan_across_workers(balancer: str) -> None:
    async with Client(balancer) as client:
        written = await client.call_tool("todo_new", {"todos": [pending("Plan on one worker"), pending("Read on another")]})
        assert written.is_error is False, written
        # Round robin: of two reads in a row, one lands on the worker that did not write.
        for _ in range(2):
            read = await client.call_tool("todo_read", {})
            assert text_of(read) == text_of(written), (text_of(read), text_of(written))
    print("ok todo_new then todo_read through the balancer see one plan")


async def cut_grep_read_on_another_worker(balancer: str) -> None:
    async with Client(balancer) as client:
        result = await client.call_tool("grep", {"pattern": "needle", "path": "notes.txt", "limit": 1000})
        text = text_of(result)
        found = re.search(r"\[tool output truncated; ref_id=([A-Za-z0-9_-]+)\]", text)
        assert found, text[-300:]
        assert "needle 0300 " not in text
        for _ in range(2):
            hit = await client.call_tool("tool_output_cache_grep", {"ref_id": found.group(1), "pattern": "needle 0300 "})
            assert hit.is_error is False, hit
            assert "notes.txt:301: needle 0300 " in text_of(hit), text_of(hit)
    print("ok a grep result cut on one worker is read with tool_output_cache_grep on the other")


async def concurrent_appends_on_two_workers(worker1: str, worker2: str) -> None:
    async with Client(worker1) as first, Client(worker2) as second:
        await first.call_tool("todo_new", {"todos": [pending("start")]})
        failures = []

        async def append(client: Client, n: int) -> None:
            result = await client.call_tool("todo_append", {"todos": [pending(f"item {n}")]})
            if result.is_error:
                failures.append(text_of(result))

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                for n in range(50):
                    tg.start_soon(append, first if n % 2 == 0 else second, n)
        assert failures == [], failures
        items = items_of(text_of(await second.call_tool("todo_read", {})))
    assert sorted(items) == sorted(["start"] + [f"item {n}" for n in range(50)]), items
    print("ok 50 concurrent todo_append on two workers leave all 50 items, each once")


async def calls_while_a_worker_dies(balancer: str, worker1_pid: int) -> None:
    """200 todo_append calls, 10 at a time through one client; worker 1 is killed while the
    calls of the 11th batch are in flight. A failed call is retried on a new client: first a read
    to see whether it was saved after all, then the call again under the same idempotency key (a
    call whose client gave up may still be saved after the read: the key makes it one item)."""
    failures: list[str] = []

    async def retry(content: str) -> None:
        for _ in range(RETRIES):
            try:
                async with Client(balancer) as fresh:
                    if content in items_of(text_of(await fresh.call_tool("todo_read", {}))):
                        return
                    retried = {"todos": [pending(content)], "idempotency_key": content}
                    if not (await fresh.call_tool("todo_append", retried)).is_error:
                        return
            except Exception as error:  # the balancer's 502 while it learns that worker 1 is gone
                failures.append(f"retry: {type(error).__name__}: {error}")
        raise AssertionError(f"{content} could not be saved in {RETRIES} retries: {failures}")

    done: set[int] = set()

    async def append(client: Client, n: int) -> None:
        try:
            result = await client.call_tool("todo_append", {"todos": [pending(f"k{n}")], "idempotency_key": f"k{n}"})
            if not result.is_error:
                done.add(n)
                return
            failures.append(text_of(result))
        except Exception as error:  # a transport error: the worker died mid-call
            failures.append(f"{type(error).__name__}: {error}")

    with anyio.fail_after(BOUND):
        async with Client(balancer) as client:
            await client.call_tool("todo_new", {"todos": [pending("base")]})
        for batch in range(20):
            calls = range(batch * 10, batch * 10 + 10)
            try:
                async with Client(balancer) as client:
                    async with anyio.create_task_group() as tg:
                        for n in calls:
                            tg.start_soon(append, client, n)
                        if batch == 10:
                            await anyio.sleep(0.005)  # let the batch's requests go out first
                            os.kill(worker1_pid, signal.SIGKILL)
            except Exception as error:  # the client's transport ended with the worker
                failures.append(f"client: {type(error).__name__}: {error}")
            for n in calls:
                if n not in done:
                    await retry(f"k{n}")
        async with Client(balancer) as client:
            items = items_of(text_of(await client.call_tool("todo_read", {})))
    assert sorted(items) == sorted(["base"] + [f"k{n}" for n in range(200)]), items
    assert all(f.strip() for f in failures), failures
    print(f"ok 200 calls while worker 1 is killed half way: nothing lost ({len(failures)} failed and were retried)")
    for failure in failures:
        print(f"failure: {failure.splitlines()[0]}")


async def retried_appends_apply_once(balancer: str, redis_pid: int, worker1_pid: int) -> None:
    """100 todo_append calls through one client per batch, each with its own idempotency key:
    3 batches of 10, one of 40, 3 of 10, on a plan of 1,000 items (so that each change spends
    milliseconds between its read and its write). Once 5 calls of the batch of 40 have succeeded, with the
    others in flight (40 appends of one session contend on its compare-and-set, so reads and
    writes are on their way to Redis all the time), Redis is stopped; one second later worker 1 is killed while its
    calls wait on Redis; 12 s after the stop Redis is continued. The workers give up on a Redis
    reply after 10 s, so the calls fail, though a write one of them sent before the stop is
    applied when Redis goes on. Every failed call is sent again, on a new client, with the same
    arguments and key (no read first), until it succeeds."""
    failures: list[str] = []
    done: set[int] = set()

    def arguments(n: int) -> dict:
        return {"todos": [pending(f"r{n}")], "idempotency_key": f"append-r{n}"}

    async def append(client: Client, n: int) -> None:
        try:
            result = await client.call_tool("todo_append", arguments(n))
            if not result.is_error:
                done.add(n)
                return
            failures.append(text_of(result))
        except Exception as error:  # a transport error: the worker died mid-call
            failures.append(f"{type(error).__name__}: {error}")

    async def retry(n: int) -> None:
        for _ in range(RETRIES):
            try:
                async with Client(balancer) as fresh:
                    result = await fresh.call_tool("todo_append", arguments(n))
                    if not result.is_error:
                        return
                    failures.append(f"retry: {text_of(result)}")
            except Exception as error:  # the balancer's 502 while it learns that worker 1 is gone
                failures.append(f"retry: {type(error).__name__}: {error}")
        raise AssertionError(f"r{n} could not be saved in {RETRIES} retries: {failures}")

    async def faults(calls: range) -> None:
        # Bounded: 10,000 looks, 1 ms apart, for 5 successes of the batch.
        for _ in range(10_000):
            if sum(n in done for n in calls) >= 5:
                break
            await anyio.sleep(0.001)
        os.kill(redis_pid, signal.SIGSTOP)
        try:
            await anyio.sleep(1)
            os.kill(worker1_pid, signal.SIGKILL)
            await anyio.sleep(11)
        finally:
            os.kill(redis_pid, signal.SIGCONT)

    batches = [range(0, 10), range(10, 20), range(20, 30), range(30, 70), range(70, 80), range(80, 90), range(90, 100)]
    with anyio.fail_after(BOUND):
        async with Client(balancer) as client:
            await client.call_tool("todo_new", {"todos": [pending(f"base {n}") for n in range(1000)]})
        for calls in batches:
            # The faults run beside the batch's client, not in its task group: the client may end
            # with worker 1, and Redis stays stopped for its 12 s all the same.
            async with anyio.create_task_group() as beside:
                if len(calls) == 40:
                    beside.start_soon(faults, calls)
                try:
                    async with Client(balancer) as client:
                        async with anyio.create_task_group() as tg:
                            for n in calls:
                                tg.start_soon(append, client, n)
                except Exception as error:  # the client's transport ended with the worker
                    failures.append(f"client: {type(error).__name__}: {error}")
            for n in calls:
                if n not in done:
                    await retry(n)
        async with Client(balancer) as client:
            items = items_of(text_of(await client.call_tool("todo_read", {})))
    assert sorted(items) == sorted([f"base {n}" for n in range(1000)] + [f"r{n}" for n in range(100)]), items[1000:]
    assert all(f.strip() for f in failures), failures
    # The kill cuts the calls waiting on worker 1 (the batch's client may end with them, and its
    # other calls are then retried too).
    assert failures, "no call failed: the kill cut none"
    print(f"ok 100 keyed appends through a stopped redis and a killed worker: each once ({len(failures)} failed and were retried)")
    for failure in failures:
        print(f"failure: {failure.splitlines()[0]}")


async def with_redis_down(worker: str, store: str) -> None:
    async with Client(worker) as client:
        with anyio.fail_after(BOUND):
            read = await client.call_tool("read", {"file_path": "notes.txt", "limit": 1})
            assert read.is_error is False, read
            assert "needle 0000" in text_of(read), text_of(read)
            todo = await client.call_tool("todo_read", {})
            assert todo.is_error is True, todo
            assert text_of(todo).startswith(f"the redis session store at {store} failed ("), text_of(todo)
            again = await client.call_tool("glob", {"pattern": "*.txt"})
            assert again.is_error is False and "notes.txt" in text_of(again), again
    print("ok with redis down, read and glob answer and todo_read names the store")


async def parallel_edits_on_two_workers(worker1: str, worker2: str) -> None:
    async with Client(worker1) as first, Client(worker2) as second:
        failures = []

        async def edit(client: Client, n: int) -> None:
            arguments = {"file_path": "edits.txt", "old_string": f"line {n}\n", "new_string": f"LINE {n}\n"}
            result = await client.call_tool("edit", arguments)
            if result.is_error:
                failures.append(text_of(result))

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                for n in range(20):
                    tg.start_soon(edit, first if n % 2 == 0 else second, n)
    assert failures == [], failures
    print("ok 20 parallel edits of one file on two workers all apply")


async def main(argv: list[str]) -> None:
    if argv[0] == "down":
        await with_redis_down(argv[1], argv[2])
        return
    if argv[0] == "edits":
        await parallel_edits_on_two_workers(argv[1], argv[2])
        return
    if argv[0] == "retries":
        await retried_appends_apply_once(argv[1], int(argv[2]), int(argv[3]))
        return
    balancer, worker1, worker2, worker1_pid = argv[0], argv[1], argv[2], int(argv[3])
    with anyio.fail_after(BOUND):
        await one_plan_across_workers(balancer)
        await cut_grep_read_on_another_worker(balancer)
        await concurrent_appends_on_two_workers(worker1, worker2)
    await calls_while_a_worker_dies(balancer, worker1_pid)


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    anyio.run(main, sys.argv[1:])
