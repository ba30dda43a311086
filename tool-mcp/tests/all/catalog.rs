//! Resources, resource templates, prompts and completions as an rmcp client sees them: listed,
//! read and got with exact values, and every bad request refused with `-32602` saying what to
//! change.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    ArgumentInfo, CacheScope, CompleteRequestParams, CompletionContext, GetPromptRequestParams, JsonObject,
    ReadResourceRequestParams, Reference,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::{Value, json};
use tool_mcp::{
    Completes, McpServer, McpServerBuilder, Prompt, PromptMessage, RequestError, Resource, ResourceTemplate,
};
use tool_runtime::{ContentPart, Registry, ResourceContents};

/// The notes a server of these tests serves, by id.
const NOTES: [(&str, &str); 2] = [("1", "milk and eggs"), ("2", "call ana")];

/// A builder with no tools, resources or prompts.
fn empty() -> McpServerBuilder {
    McpServer::builder(Registry::builder().build().unwrap())
}

/// A server of notes: two resources, two templates, three prompts, three completions, and
/// resource subscriptions on listen streams.
pub(crate) fn notes_server() -> McpServer {
    notes_builder().build()
}

/// The builder of [`notes_server`].
pub(crate) fn notes_builder() -> McpServerBuilder {
    empty()
        .resource(
            Resource::new("notes://index", "index")
                .title("Index")
                .description("Every note's id.")
                .mime_type("text/markdown")
                .cache(Duration::from_secs(60), CacheScope::Public),
            |_| async { Ok(ResourceContents::Text("- 1\n- 2".to_owned())) },
        )
        .resource(Resource::new("notes://logo", "logo").mime_type("image/png"), |_| async {
            Ok(ResourceContents::Blob("iVBORw0KGgo=".to_owned()))
        })
        .resource_template(
            ResourceTemplate::new("notes://note/{id}", "note").unwrap().mime_type("text/plain"),
            |request| async move {
                let id = &request.variables["id"];
                match NOTES.iter().find(|(n, _)| n == id) {
                    Some((_, text)) => Ok(ResourceContents::Text(format!("{}: {text}", request.uri))),
                    None => {
                        Err(RequestError::invalid(format!("there is no note `{id}`; the ids are in notes://index")))
                    }
                }
            },
        )
        .resource_template(ResourceTemplate::new("notes://broken/{id}", "broken").unwrap(), |request| async move {
            match request.variables["id"].as_str() {
                "panic" => panic!("the store is gone"),
                _ => Err(RequestError::failed("the store did not answer")),
            }
        })
        .prompt(
            Prompt::new("summarize")
                .title("Summarize")
                .description("Summarize a note.")
                .argument("id", "The note's id.")
                .optional_argument("style", "`short` or `long`."),
            |request| async move {
                let style = request.arguments.get("style").map_or("short", String::as_str);
                Ok(vec![
                    PromptMessage::user(ContentPart::resource_text(
                        format!("notes://note/{}", request.arguments["id"]),
                        Some("text/plain".to_owned()),
                        "milk and eggs",
                    )),
                    PromptMessage::user(ContentPart::text(format!("Summarize the note above, {style}."))),
                    PromptMessage::assistant(ContentPart::image("iVBORw0KGgo=", "image/png")),
                ])
            },
        )
        .prompt(Prompt::new("hello"), |_| async { Ok(vec![PromptMessage::user(ContentPart::text("hello"))]) })
        .prompt(Prompt::new("pair").argument("a", "A.").argument("b", "B."), |_| async { Ok(Vec::new()) })
        .completion(Completes::prompt_argument("summarize", "style"), |request| async move {
            Ok(["short", "long"].into_iter().filter(|s| s.starts_with(&request.value)).map(String::from).collect())
        })
        .completion(Completes::template_variable("notes://note/{id}", "id"), |request| async move {
            Ok(vec![format!("typed {:?}, context {:?}", request.value, request.context)])
        })
        .completion(Completes::prompt_argument("summarize", "id"), |_| async {
            Ok((1..=150).map(|n| n.to_string()).collect())
        })
        .resource_subscriptions(true)
}

/// A client of `server` over an in-process pipe.
async fn connect(server: McpServer) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move { server.serve(server_io).await.unwrap().waiting().await });
    ().serve(client_io).await.unwrap()
}

/// A JSON-RPC error as `{"code", "message", "data"}`.
fn error_of<T: std::fmt::Debug>(result: Result<T, ServiceError>) -> Value {
    match result {
        Err(ServiceError::McpError(error)) => {
            json!({"code": error.code.0, "message": error.message, "data": error.data})
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn read(uri: &str) -> ReadResourceRequestParams {
    ReadResourceRequestParams::new(uri)
}

fn prompt(name: &str, arguments: Value) -> GetPromptRequestParams {
    let Value::Object(arguments) = arguments else { panic!("arguments are an object") };
    GetPromptRequestParams::new(name).with_arguments(JsonObject::from_iter(arguments))
}

#[tokio::test]
async fn nothing_declared_means_no_capability_and_method_not_found() {
    let client = connect(empty().build()).await;
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert_eq!((&capabilities.resources, &capabilities.prompts, &capabilities.completions), (&None, &None, &None));
    assert_eq!(error_of(client.list_resources(None).await)["code"], -32601);
    assert_eq!(error_of(client.read_resource(read("notes://index")).await)["code"], -32601);
    assert_eq!(error_of(client.list_prompts(None).await)["code"], -32601);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn each_capability_is_given_when_something_of_it_is_declared() {
    let client = connect(notes_server()).await;
    let capabilities = serde_json::to_value(&client.peer_info().unwrap().capabilities).unwrap();
    assert_eq!(
        (&capabilities["resources"], &capabilities["prompts"], &capabilities["completions"]),
        (&json!({"subscribe": true}), &json!({}), &json!({}))
    );
    client.cancel().await.unwrap();

    let without_subscriptions =
        empty().resource(Resource::new("a://b", "b"), |_| async { Ok(ResourceContents::Text(String::new())) });
    let client = connect(without_subscriptions.build()).await;
    let capabilities = serde_json::to_value(&client.peer_info().unwrap().capabilities).unwrap();
    assert_eq!(capabilities["resources"], json!({}));
    client.cancel().await.unwrap();

    let only_prompts = empty().prompt(Prompt::new("hello"), |_| async { Ok(Vec::new()) }).build();
    let client = connect(only_prompts).await;
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert_eq!((capabilities.resources.is_none(), capabilities.prompts.is_some()), (true, true));
    assert_eq!(capabilities.completions, None);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn resources_and_templates_are_listed_sorted_with_what_was_declared() {
    let client = connect(notes_server()).await;
    assert_eq!(
        serde_json::to_value(client.list_all_resources().await.unwrap()).unwrap(),
        json!([
            {"uri": "notes://index", "name": "index", "title": "Index", "description": "Every note's id.",
             "mimeType": "text/markdown"},
            {"uri": "notes://logo", "name": "logo", "mimeType": "image/png"},
        ])
    );
    assert_eq!(
        serde_json::to_value(client.list_all_resource_templates().await.unwrap()).unwrap(),
        json!([
            {"uriTemplate": "notes://broken/{id}", "name": "broken"},
            {"uriTemplate": "notes://note/{id}", "name": "note", "mimeType": "text/plain"},
        ])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_text_resource_and_a_blob_resource_are_read_with_their_uri_and_media_type() {
    let client = connect(notes_server()).await;
    let index = client.read_resource(read("notes://index")).await.unwrap();
    assert_eq!(
        serde_json::to_value(&index.contents).unwrap(),
        json!([{"uri": "notes://index", "mimeType": "text/markdown", "text": "- 1\n- 2"}])
    );
    assert_eq!((index.ttl_ms, index.cache_scope), (Some(60_000), Some(CacheScope::Public)));
    let logo = client.read_resource(read("notes://logo")).await.unwrap();
    assert_eq!(
        serde_json::to_value(&logo.contents).unwrap(),
        json!([{"uri": "notes://logo", "mimeType": "image/png", "blob": "iVBORw0KGgo="}])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_uri_that_expands_a_template_is_read_with_its_variables() {
    let client = connect(notes_server()).await;
    let note = client.read_resource(read("notes://note/2")).await.unwrap();
    assert_eq!(
        serde_json::to_value(&note.contents).unwrap(),
        json!([{"uri": "notes://note/2", "mimeType": "text/plain", "text": "notes://note/2: call ana"}])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_uri_of_no_resource_and_no_template_is_invalid_params_with_the_uri_in_data() {
    let client = connect(notes_server()).await;
    assert_eq!(
        error_of(client.read_resource(read("notes://note/1/extra")).await),
        json!({
            "code": -32602,
            "message": "resource `notes://note/1/extra` not found: no resource has this URI and it expands no \
                        template; read a URI that `resources/list` gives or that expands a template of \
                        `resources/templates/list`",
            "data": {"uri": "notes://note/1/extra"}
        })
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_template_handler_refusing_its_variables_is_invalid_params_with_the_uri() {
    let client = connect(notes_server()).await;
    assert_eq!(
        error_of(client.read_resource(read("notes://note/9")).await),
        json!({"code": -32602, "message": "there is no note `9`; the ids are in notes://index",
               "data": {"uri": "notes://note/9"}})
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_failing_or_panicking_handler_is_an_internal_error_and_the_server_goes_on() {
    let client = connect(notes_server()).await;
    assert_eq!(
        error_of(client.read_resource(read("notes://broken/1")).await),
        json!({"code": -32603, "message": "the store did not answer", "data": null})
    );
    assert_eq!(
        error_of(client.read_resource(read("notes://broken/panic")).await),
        json!({"code": -32603, "message": "the handler of resource `notes://broken/panic` panicked; see the server's log",
               "data": null})
    );
    assert_eq!(client.read_resource(read("notes://index")).await.unwrap().contents.len(), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn prompts_are_listed_sorted_with_their_arguments() {
    let client = connect(notes_server()).await;
    assert_eq!(
        serde_json::to_value(client.list_all_prompts().await.unwrap()).unwrap(),
        json!([
            {"name": "hello"},
            {"name": "pair", "arguments": [
                {"name": "a", "description": "A.", "required": true},
                {"name": "b", "description": "B.", "required": true},
            ]},
            {"name": "summarize", "title": "Summarize", "description": "Summarize a note.", "arguments": [
                {"name": "id", "description": "The note's id.", "required": true},
                {"name": "style", "description": "`short` or `long`.", "required": false},
            ]},
        ])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_prompt_is_got_with_its_description_and_messages_of_every_content_kind() {
    let client = connect(notes_server()).await;
    let result = client.get_prompt(prompt("summarize", json!({"id": "1", "style": "long"}))).await.unwrap();
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({
            "description": "Summarize a note.",
            "messages": [
                {"role": "user", "content": {"type": "resource", "resource":
                    {"uri": "notes://note/1", "mimeType": "text/plain", "text": "milk and eggs"}}},
                {"role": "user", "content": {"type": "text", "text": "Summarize the note above, long."}},
                {"role": "assistant", "content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}},
            ]
        })
    );
    let short = client.get_prompt(prompt("summarize", json!({"id": "1"}))).await.unwrap();
    assert_eq!(
        serde_json::to_value(&short.messages[1].content).unwrap(),
        json!({"type": "text", "text": "Summarize the note above, short."})
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_prompt_requests_are_invalid_params_saying_what_to_send() {
    let client = connect(notes_server()).await;
    let message = |result| error_of(result).as_object().map(|e| (e["code"].clone(), e["message"].clone())).unwrap();
    assert_eq!(
        message(client.get_prompt(prompt("summarise", json!({}))).await),
        (json!(-32602), json!("there is no prompt `summarise`; the prompts are `hello`, `pair`, `summarize`"))
    );
    assert_eq!(
        message(client.get_prompt(prompt("summarize", json!({"style": "long"}))).await),
        (json!(-32602), json!("prompt `summarize` needs the argument `id`; send it in `arguments`"))
    );
    assert_eq!(
        message(client.get_prompt(prompt("pair", json!({}))).await),
        (json!(-32602), json!("prompt `pair` needs the arguments `a`, `b`; send them in `arguments`"))
    );
    assert_eq!(
        message(client.get_prompt(prompt("summarize", json!({"id": "1", "tone": "dry"}))).await),
        (json!(-32602), json!("prompt `summarize` has no argument `tone`; its arguments are `id`, `style`"))
    );
    assert_eq!(
        message(client.get_prompt(prompt("hello", json!({"name": "ana"}))).await),
        (json!(-32602), json!("prompt `hello` has no argument `name`; its arguments are none"))
    );
    assert_eq!(
        message(client.get_prompt(prompt("summarize", json!({"id": 1}))).await),
        (
            json!(-32602),
            json!("argument `id` of prompt `summarize` is 1, not a string; send every argument as a string")
        )
    );
    client.cancel().await.unwrap();
}

fn complete(reference: Reference, name: &str, value: &str) -> CompleteRequestParams {
    CompleteRequestParams::new(reference, ArgumentInfo::new(name, value))
}

#[tokio::test]
async fn a_prompt_argument_completes_to_its_handlers_values() {
    let client = connect(notes_server()).await;
    let result = client.complete(complete(Reference::for_prompt("summarize"), "style", "s")).await.unwrap();
    assert_eq!(
        serde_json::to_value(&result.completion).unwrap(),
        json!({"values": ["short"], "total": 1, "hasMore": false})
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_template_variable_completes_with_the_context_of_the_others() {
    let client = connect(notes_server()).await;
    let request = complete(Reference::for_resource("notes://note/{id}"), "id", "1")
        .with_context(CompletionContext::with_arguments([("kind".to_owned(), "todo".to_owned())].into()));
    let result = client.complete(request).await.unwrap();
    assert_eq!(result.completion.values, [r#"typed "1", context {"kind": "todo"}"#]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn more_than_a_hundred_values_are_cut_to_a_hundred_with_the_total() {
    let client = connect(notes_server()).await;
    let result = client.complete(complete(Reference::for_prompt("summarize"), "id", "")).await.unwrap();
    let expected: Vec<String> = (1..=100).map(|n| n.to_string()).collect();
    assert_eq!(
        (result.completion.values, result.completion.total, result.completion.has_more),
        (expected, Some(150), Some(true))
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_argument_with_no_completion_completes_to_nothing() {
    let server = empty()
        .prompt(Prompt::new("p").argument("a", "A.").argument("b", "B."), |_| async { Ok(Vec::new()) })
        .completion(Completes::prompt_argument("p", "a"), |_| async { Ok(vec!["x".to_owned()]) })
        .build();
    let client = connect(server).await;
    let result = client.complete(complete(Reference::for_prompt("p"), "b", "")).await.unwrap();
    assert_eq!(serde_json::to_value(&result.completion).unwrap(), json!({"values": []}));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn completing_what_is_not_declared_is_invalid_params_naming_what_is() {
    let client = connect(notes_server()).await;
    let message = |result| error_of(result).as_object().map(|e| (e["code"].clone(), e["message"].clone())).unwrap();
    assert_eq!(
        message(client.complete(complete(Reference::for_prompt("summarize"), "tone", "")).await),
        (json!(-32602), json!("prompt `summarize` has no argument `tone`; its arguments are `id`, `style`"))
    );
    assert_eq!(
        message(client.complete(complete(Reference::for_prompt("nope"), "id", "")).await),
        (json!(-32602), json!("there is no prompt `nope`; the prompts are `hello`, `pair`, `summarize`"))
    );
    assert_eq!(
        message(client.complete(complete(Reference::for_resource("notes://note/{id}"), "name", "")).await),
        (json!(-32602), json!("resource template `notes://note/{id}` has no variable `name`; its variables are `id`"))
    );
    assert_eq!(
        message(client.complete(complete(Reference::for_resource("notes://note/1"), "id", "")).await),
        (
            json!(-32602),
            json!(
                "there is no resource template `notes://note/1`; send the `uriTemplate` of one that \
                 `resources/templates/list` gives: `notes://broken/{id}`, `notes://note/{id}`"
            )
        )
    );
    client.cancel().await.unwrap();
}

/// A server whose `whoami://` resource says the `X-User` header of the request, or `nobody`.
fn whoami_server() -> McpServer {
    empty()
        .resource(Resource::new("whoami://", "whoami"), |request| async move {
            let user =
                request.http.as_ref().and_then(|parts| parts.headers.get("x-user")?.to_str().ok().map(String::from));
            Ok(ResourceContents::Text(user.unwrap_or_else(|| "nobody".to_owned())))
        })
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_sees_the_headers_of_the_http_request_and_none_on_a_stream() {
    let running = crate::common::Running::start(whoami_server()).await;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "whoami://"}});
    let response = crate::common::post(running.addr, "/mcp", "127.0.0.1", &[("X-User", "ana")], &request).await;
    let message: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(message["result"]["contents"], json!([{"uri": "whoami://", "text": "ana"}]));
    running.stop().await;

    let client = connect(whoami_server()).await;
    let contents = client.read_resource(read("whoami://")).await.unwrap().contents;
    assert_eq!(serde_json::to_value(contents).unwrap(), json!([{"uri": "whoami://", "text": "nobody"}]));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_stdio_client_subscribes_gets_the_updates_of_its_uri_only_and_unsubscribes() {
    let server = notes_server();
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve_lines_until(server_read, server_write, std::future::pending()).await }
    });
    let (reader, writer) = tokio::io::split(client_io);
    let mut client = crate::common::RawClient::initialize(reader, writer).await;
    let subscribe = |id: u64, method: &str, uri: &str| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"uri": uri}});

    client.send(subscribe(2, "resources/subscribe", "notes://note/1")).await;
    assert_eq!(client.recv().await, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    server.notify_resource_updated("notes://index");
    server.notify_resource_updated("notes://note/1");
    assert_eq!(
        client.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "notes://note/1"}})
    );

    client.send(subscribe(3, "resources/subscribe", "notes://nothing")).await;
    let refused = client.recv().await;
    assert_eq!((&refused["id"], &refused["error"]["code"]), (&json!(3), &json!(-32602)));
    assert_eq!(refused["error"]["data"], json!({"uri": "notes://nothing"}));

    client.send(subscribe(4, "resources/unsubscribe", "notes://note/1")).await;
    assert_eq!(client.recv().await, json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
    server.notify_resource_updated("notes://note/1");
    client.ping(5).await;
    assert_eq!(client.recv().await, json!({"jsonrpc": "2.0", "id": 5, "result": {}}));
    serving.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_subscribe_over_stateless_http_says_to_use_a_listen_stream() {
    let running = crate::common::Running::start(notes_server()).await;
    let request =
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "notes://index"}});
    let response = crate::common::post(running.addr, "/mcp", "127.0.0.1", &[], &request).await;
    let message: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(
        message["error"],
        json!({
            "code": -32600,
            "message": "`resources/subscribe` needs a connection that lasts and this HTTP request has no session: \
                        follow the resource on a `subscriptions/listen` stream (protocol 2026-07-28), or ask the \
                        server's operator for legacy sessions"
        })
    );
    running.stop().await;
}
