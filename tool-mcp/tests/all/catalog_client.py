"""The notes server of `catalog.rs` as the official Python MCP SDK sees it over stateless
Streamable HTTP (protocol 2026-07-28): resources, templates, prompts and completions, the caching
hints, and the errors of bad requests.

Usage:
    python catalog_client.py URL
    python catalog_client.py URL listen
    python catalog_client.py URL legacy

`listen` opens a `subscriptions/listen` stream following `notes://note/1` (and `notes://nothing`,
which the server leaves out), prints `listening`, and waits for the first update, which must be of
`notes://note/1`; the test announces updates of `notes://index` and `notes://note/1` until then.
`legacy` connects with the initialize handshake (a version before 2026-07-28, in a legacy HTTP
session), sends `resources/subscribe` of `notes://note/1`, prints `subscribed`, and waits for its
`notifications/resources/updated`.

Run by `tool-mcp/tests/all/catalog_sdk.rs`, which serves the notes server on a free loopback
port. Prints one line per check (`ok <check>`) and exits 0; a failed check raises, so the process
exits non-zero with the traceback on stderr. Exits 3 with a message naming `scripts/test.sh` when
the `mcp` package is missing. Every wait is bounded (`anyio.fail_after`); nothing is timed.
"""

import sys

try:
    import anyio
    from mcp import Client, MCPError, types
    from mcp.shared.subscriptions import ResourceUpdated
except ImportError as error:
    print(f"no Python MCP SDK ({error}): run scripts/test.sh, or install conformance/requirements.txt", file=sys.stderr)
    sys.exit(3)

# The bound on every wait, in seconds (never a timing assertion).
BOUND = 120


async def refused(call) -> MCPError:
    """The JSON-RPC error `call()` raises."""
    try:
        await call()
    except MCPError as error:
        return error
    raise AssertionError("the request did not fail")


async def checks(url: str) -> None:
    async with Client(url) as client:
        listed = await client.list_resources(cache_mode="refresh")
        assert [(r.uri, r.name, r.mime_type) for r in listed.resources] == [
            ("notes://index", "index", "text/markdown"),
            ("notes://logo", "logo", "image/png"),
        ], listed
        assert (listed.ttl_ms, listed.cache_scope) == (0, "private"), listed
        templates = await client.list_resource_templates(cache_mode="refresh")
        assert [t.uri_template for t in templates.resource_templates] == [
            "notes://broken/{id}",
            "notes://note/{id}",
        ], templates
        print("ok list resources and templates, with caching hints")

        index = await client.read_resource("notes://index", cache_mode="refresh")
        assert [c.model_dump(exclude_none=True) for c in index.contents] == [
            {"uri": "notes://index", "mime_type": "text/markdown", "text": "- 1\n- 2"}
        ], index
        assert (index.ttl_ms, index.cache_scope) == (60_000, "public"), index
        logo = await client.read_resource("notes://logo", cache_mode="refresh")
        assert isinstance(logo.contents[0], types.BlobResourceContents), logo
        assert logo.contents[0].blob == "iVBORw0KGgo=", logo
        note = await client.read_resource("notes://note/1", cache_mode="refresh")
        assert note.contents[0].text == "notes://note/1: milk and eggs", note
        assert (note.ttl_ms, note.cache_scope) == (0, "private"), note
        print("ok read a text resource, a blob resource and a template's resource")

        missing = await refused(lambda: client.read_resource("notes://nothing", cache_mode="refresh"))
        assert (missing.code, missing.data) == (-32602, {"uri": "notes://nothing"}), missing
        refused_note = await refused(lambda: client.read_resource("notes://note/9", cache_mode="refresh"))
        assert (refused_note.code, refused_note.message, refused_note.data) == (
            -32602,
            "there is no note `9`; the ids are in notes://index",
            {"uri": "notes://note/9"},
        ), refused_note
        print("ok an unknown resource and a refused template value are -32602 with the uri")

        prompts = await client.list_prompts(cache_mode="refresh")
        assert [p.name for p in prompts.prompts] == ["hello", "pair", "summarize"], prompts
        assert [(a.name, a.required) for a in prompts.prompts[2].arguments] == [("id", True), ("style", False)]
        got = await client.get_prompt("summarize", {"id": "1"})
        assert got.description == "Summarize a note.", got
        assert [(m.role, m.content.type) for m in got.messages] == [
            ("user", "resource"),
            ("user", "text"),
            ("assistant", "image"),
        ], got
        assert got.messages[1].content.text == "Summarize the note above, short.", got
        print("ok list prompts and get one")

        missing_argument = await refused(lambda: client.get_prompt("summarize", {"style": "long"}))
        assert (missing_argument.code, missing_argument.message) == (
            -32602,
            "prompt `summarize` needs the argument `id`; send it in `arguments`",
        ), missing_argument
        print("ok a missing required argument is -32602 naming it")

        completed = await client.complete(types.PromptReference(name="summarize"), {"name": "style", "value": "l"})
        assert (completed.completion.values, completed.completion.total) == (["long"], 1), completed
        unknown_variable = await refused(
            lambda: client.complete(
                types.ResourceTemplateReference(uri="notes://note/{id}"), {"name": "slug", "value": ""}
            )
        )
        assert (unknown_variable.code, unknown_variable.message) == (
            -32602,
            "resource template `notes://note/{id}` has no variable `slug`; its variables are `id`",
        ), unknown_variable
        print("ok complete a prompt argument, and an unknown template variable is -32602")


async def listen_checks(url: str) -> None:
    async with Client(url) as client:
        async with client.listen(resource_subscriptions=["notes://note/1", "notes://nothing"]) as subscription:
            assert subscription.honored.resource_subscriptions == ["notes://note/1"], subscription.honored
            print("listening", flush=True)
            async for event in subscription:
                assert event == ResourceUpdated(uri="notes://note/1"), event
                break
    print("ok a listen stream follows a template's resource and gets only its updates", flush=True)


async def legacy_checks(url: str) -> None:
    updated: list[str] = []
    got = anyio.Event()

    async def on_message(message) -> None:
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/resources/updated":
            updated.append(inner.params.uri)
            got.set()

    async with Client(url, mode="legacy", message_handler=on_message) as client:
        await client.subscribe_resource("notes://note/1")
        print("subscribed", flush=True)
        await got.wait()
        assert updated[0] == "notes://note/1", updated
        await client.unsubscribe_resource("notes://note/1")
    print("ok a legacy session subscribes to a template's resource and gets its updates", flush=True)


async def main(argv: list[str]) -> None:
    with anyio.fail_after(BOUND):
        if argv[1:] == ["listen"]:
            await listen_checks(argv[0])
        elif argv[1:] == ["legacy"]:
            await legacy_checks(argv[0])
        else:
            await checks(argv[0])


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    anyio.run(main, sys.argv[1:])
