//! search: the DuckDuckGo and Brave backends against a local server serving responses of the
//! shape the real services send, the domain filter, the API key and the output JSON.

use crate::webfetch_support;

use serde_json::{Value, json};
use tool_runtime::{DefaultPolicy, Registry, ToolCall, ToolContext, ToolMessage};
use tool_std::web::{SearchConfig, WEB_CONFIG, WebConfig};
use webfetch_support::{Reply, Server};

/// A DuckDuckGo HTML results page: one ad, then three web results whose links go through
/// DuckDuckGo's `/l/?uddg=` redirect (as `html.duckduckgo.com/html/` serves them).
const DDG_PAGE: &str = r#"<!DOCTYPE html>
<html><head><title>rust book at DuckDuckGo</title></head>
<body>
<div class="serp__results"><div id="links" class="results">
  <div class="result results_links results_links_deep result--ad ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title"><a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=shop.example&amp;u3=x">Buy Rust Books</a></h2>
      <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=shop.example">Cheap <b>books</b></a>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdoc.rust%2Dlang.org%2Fbook%2F&amp;rut=4f1c">The Rust Programming Language - The Rust Programming Language</a>
      </h2>
      <div class="result__extras"><div class="result__extras__url">
        <a class="result__url" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdoc.rust%2Dlang.org%2Fbook%2F">doc.rust-lang.org/book/</a>
      </div></div>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdoc.rust%2Dlang.org%2Fbook%2F">by Steve Klabnik, Carol Nichols. This version of the text assumes you&#x27;re using <b>Rust</b> 1.85.0</a>
      <div class="clear"></div>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgithub.com%2Frust%2Dlang%2Fbook&amp;rut=9a2e">GitHub - rust-lang/book: The Rust Programming Language</a></h2>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgithub.com%2Frust%2Dlang%2Fbook">This repository contains the source of &quot;The <b>Rust</b> Programming Language&quot; book.</a>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2Flearn&amp;rut=77b0">Learn Rust - Rust Programming Language</a></h2>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2Flearn">Affectionately nicknamed &quot;the book,&quot; The <b>Rust</b> Programming Language will give you an overview.</a>
    </div>
  </div>
</div></div>
</body></html>"#;

/// A Brave Search API answer (`/res/v1/web/search`), trimmed to two results.
const BRAVE_ANSWER: &str = r#"{
  "query": {"original": "rust", "show_strict_warning": false, "is_navigational": true, "country": "us"},
  "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
  "type": "search",
  "web": {
    "type": "search",
    "results": [
      {"title": "Rust Programming Language", "url": "https://www.rust-lang.org/", "is_source_local": false,
       "is_source_both": false,
       "description": "A language empowering everyone to build reliable and efficient <strong>software</strong>.",
       "profile": {"name": "Rust-lang", "url": "https://www.rust-lang.org/", "long_name": "rust-lang.org",
                   "img": "https://imgs.search.brave.com/x.png"},
       "language": "en", "family_friendly": true, "type": "search_result", "subtype": "generic",
       "meta_url": {"scheme": "https", "netloc": "rust-lang.org", "hostname": "www.rust-lang.org",
                    "favicon": "https://imgs.search.brave.com/f.png", "path": ""}},
      {"title": "<strong>Rust</strong> (programming language) - Wikipedia",
       "url": "https://en.wikipedia.org/wiki/Rust_(programming_language)",
       "description": "<strong>Rust</strong> is a general-purpose programming language &amp; more.",
       "type": "search_result", "subtype": "generic"}
    ],
    "family_friendly": true
  }
}"#;

fn config(server: &Server) -> WebConfig {
    WebConfig {
        search: SearchConfig {
            ddg_base_url: server.url(""),
            brave_base_url: server.url(""),
            brave_api_key: Some("test-key".to_owned()),
            ..SearchConfig::default()
        },
        ..WebConfig::default()
    }
}

fn registry(config: WebConfig) -> Registry {
    tool_std::registry_builder()
        .sets(["web"])
        .policy(DefaultPolicy::new().allow_all_external())
        .override_dependency(&WEB_CONFIG, config)
        .build()
        .unwrap()
}

async fn call(registry: &Registry, arguments: Value) -> ToolMessage {
    registry.call(&ToolCall::new("call_1", "search", arguments.to_string()), &ToolContext::new()).await
}

async fn search(registry: &Registry, arguments: Value) -> Value {
    let message = call(registry, arguments).await;
    assert!(!message.is_error, "expected success, got: {}", message.text());
    serde_json::from_str(&message.text()).unwrap()
}

async fn search_err(registry: &Registry, arguments: Value) -> String {
    let message = call(registry, arguments).await;
    assert!(message.is_error, "expected an error, got: {}", message.text());
    message.text().into_owned()
}

async fn ddg_server() -> Server {
    Server::start(|_| Reply::ok("text/html; charset=UTF-8", DDG_PAGE)).await
}

async fn brave_server() -> Server {
    Server::start(|_| Reply::ok("application/json", BRAVE_ANSWER)).await
}

fn urls(output: &Value) -> Vec<&str> {
    output["results"].as_array().unwrap().iter().map(|r| r["url"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn ddg_results_are_read_from_the_html_page_without_ads() {
    let server = ddg_server().await;

    let output = search(&registry(config(&server)), json!({"query": "rust book"})).await;

    assert_eq!(
        output,
        json!({
            "query": "rust book", "backend": "ddg", "count": 3,
            "results": [
                {"title": "The Rust Programming Language - The Rust Programming Language",
                 "url": "https://doc.rust-lang.org/book/",
                 "snippet": "by Steve Klabnik, Carol Nichols. This version of the text assumes you're using Rust 1.85.0",
                 "source": "doc.rust-lang.org"},
                {"title": "GitHub - rust-lang/book: The Rust Programming Language",
                 "url": "https://github.com/rust-lang/book",
                 "snippet": "This repository contains the source of \"The Rust Programming Language\" book.",
                 "source": "github.com"},
                {"title": "Learn Rust - Rust Programming Language",
                 "url": "https://www.rust-lang.org/learn",
                 "snippet": "Affectionately nicknamed \"the book,\" The Rust Programming Language will give you an overview.",
                 "source": "www.rust-lang.org"},
            ]
        })
    );
}

#[tokio::test]
async fn ddg_is_asked_with_the_query_in_the_url() {
    let server = ddg_server().await;

    search(&registry(config(&server)), json!({"query": "rust book"})).await;

    let requests = server.requests();
    assert_eq!((requests[0].method.as_str(), requests[0].target.as_str()), ("GET", "/html/?q=rust+book"));
}

#[tokio::test]
async fn a_base_url_with_a_path_keeps_it() {
    let server = ddg_server().await;
    let mut config = config(&server);
    config.search.ddg_base_url = server.url("/mirror");

    search(&registry(config), json!({"query": "q"})).await;

    assert_eq!(server.requests()[0].target, "/mirror/html/?q=q");
}

#[tokio::test]
async fn max_results_caps_the_results() {
    let server = ddg_server().await;

    let output = search(&registry(config(&server)), json!({"query": "rust", "max_results": 2})).await;

    assert_eq!(output["count"], 2);
    assert_eq!(urls(&output), ["https://doc.rust-lang.org/book/", "https://github.com/rust-lang/book"]);
}

#[tokio::test]
async fn allowed_domains_keep_the_domain_and_its_subdomains_case_insensitively() {
    let server = ddg_server().await;

    let output =
        search(&registry(config(&server)), json!({"query": "rust", "allowed_domains": ["Rust-Lang.ORG"]})).await;

    assert_eq!(urls(&output), ["https://doc.rust-lang.org/book/", "https://www.rust-lang.org/learn"]);
    assert_eq!(output["count"], 2);
}

#[tokio::test]
async fn a_domain_matches_only_at_a_dot_boundary() {
    let server = ddg_server().await;

    let output = search(&registry(config(&server)), json!({"query": "rust", "allowed_domains": ["ub.com"]})).await;

    assert_eq!(output["results"], json!([]));
    assert_eq!(output["count"], 0);
}

#[tokio::test]
async fn brave_results_are_read_from_the_api_answer() {
    let server = brave_server().await;

    let output = search(&registry(config(&server)), json!({"query": "rust", "backend": "brave"})).await;

    assert_eq!(
        output,
        json!({
            "query": "rust", "backend": "brave", "count": 2,
            "results": [
                {"title": "Rust Programming Language", "url": "https://www.rust-lang.org/",
                 "snippet": "A language empowering everyone to build reliable and efficient software.",
                 "source": "www.rust-lang.org"},
                {"title": "Rust (programming language) - Wikipedia",
                 "url": "https://en.wikipedia.org/wiki/Rust_(programming_language)",
                 "snippet": "Rust is a general-purpose programming language & more.",
                 "source": "en.wikipedia.org"},
            ]
        })
    );
}

#[tokio::test]
async fn brave_is_asked_with_the_query_the_count_and_the_key() {
    let server = brave_server().await;

    search(&registry(config(&server)), json!({"query": "rust async", "backend": "brave", "max_results": 7})).await;

    let request = &server.requests()[0];
    assert_eq!(request.target, "/res/v1/web/search?q=rust+async&count=7");
    assert_eq!(request.header("x-subscription-token"), Some("test-key"));
    assert_eq!(request.header("accept"), Some("application/json"));
}

#[tokio::test]
async fn the_brave_key_is_read_from_the_configured_environment_variable() {
    let server = brave_server().await;
    let mut config = config(&server);
    config.search.brave_api_key = None;
    // Cargo sets this variable for every test process it runs.
    config.search.brave_api_key_env = "CARGO_PKG_NAME".to_owned();

    search(&registry(config), json!({"query": "rust", "backend": "brave"})).await;

    assert_eq!(server.requests()[0].header("x-subscription-token"), Some("tool-std"));
}

#[tokio::test]
async fn a_missing_brave_key_names_the_environment_variable() {
    let server = brave_server().await;
    let mut config = config(&server);
    config.search.brave_api_key = None;
    config.search.brave_api_key_env = "TOOL_STD_TEST_BRAVE_KEY_THAT_IS_NEVER_SET".to_owned();

    assert_eq!(
        search_err(&registry(config), json!({"query": "rust", "backend": "brave"})).await,
        "the brave backend needs an API key in the environment variable TOOL_STD_TEST_BRAVE_KEY_THAT_IS_NEVER_SET; \
         set it, or use backend ddg"
    );
    assert_eq!(server.requests(), []);
}

#[test]
fn the_default_brave_key_variable_is_brave_api_key() {
    assert_eq!(SearchConfig::default().brave_api_key_env, "BRAVE_API_KEY");
}

#[tokio::test]
async fn a_rejected_key_says_to_check_it() {
    let server = Server::start(|_| Reply::with(401, &[("Content-Type", "application/json")], "{}")).await;

    assert_eq!(
        search_err(&registry(config(&server)), json!({"query": "rust", "backend": "brave"})).await,
        "brave answered HTTP 401; check the API key"
    );
}

#[tokio::test]
async fn an_answer_of_another_shape_is_an_error() {
    let server = Server::start(|_| Reply::ok("application/json", "[1, 2]")).await;

    assert_eq!(
        search_err(&registry(config(&server)), json!({"query": "rust", "backend": "brave"})).await,
        "brave sent a response this build cannot read (the answer is not a JSON object); try the other backend"
    );
}

#[tokio::test]
async fn a_result_without_a_url_is_an_error() {
    let server = Server::start(|_| Reply::ok("application/json", r#"{"web": {"results": [{"title": "x"}]}}"#)).await;

    assert_eq!(
        search_err(&registry(config(&server)), json!({"query": "rust", "backend": "brave"})).await,
        "brave sent a response this build cannot read (missing field `url`); try the other backend"
    );
}

#[tokio::test]
async fn a_backend_that_cannot_be_reached_gives_the_error_class() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let config =
        WebConfig { search: SearchConfig { ddg_base_url: url, ..SearchConfig::default() }, ..WebConfig::default() };

    let error = search_err(&registry(config), json!({"query": "rust"})).await;

    assert!(error.starts_with("connection_refused: the request to ddg failed ("), "{error}");
}

#[tokio::test]
async fn bad_arguments_are_refused() {
    let server = ddg_server().await;
    let registry = registry(config(&server));

    assert_eq!(search_err(&registry, json!({"query": " "})).await, "query is empty; give the words to search for");
    assert_eq!(
        search_err(&registry, json!({"query": "q", "max_results": 21})).await,
        "invalid arguments for `search`: `max_results`: must be at most 20; got 21"
    );
    assert_eq!(
        search_err(&registry, json!({"query": "q", "max_results": 0})).await,
        "invalid arguments for `search`: `max_results`: must be at least 1; got 0"
    );
    assert_eq!(
        search_err(&registry, json!({"query": "q", "allowed_domains": ["docs.rs", "https://x.com/"]})).await,
        "allowed_domains[1] `https://x.com/` is not a domain; give host names such as `docs.rs`"
    );
    assert_eq!(
        search_err(&registry, json!({"query": "q", "backend": "google"})).await,
        "invalid arguments for `search`: `backend`: unknown variant `google`, expected `ddg` or `brave`"
    );
    assert_eq!(server.requests(), []);
}

#[test]
fn search_is_tagged_read_only_and_external() {
    let registry = tool_std::registry_builder().sets(["web"]).build().unwrap();

    assert_eq!(registry.get("search").unwrap().definition().tags, ["read_only", "external"]);
}
