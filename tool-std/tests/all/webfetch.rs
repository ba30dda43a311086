//! webfetch against a real HTTP server on 127.0.0.1: cleaning, byte cap, charsets, content types,
//! redirects, the address policy and the classes of network errors.

use crate::webfetch_support;

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::{DefaultPolicy, Registry, ToolCall, ToolContext, ToolMessage};
use tool_std::web::{NetworkPolicy, StaticHosts, WEB_CONFIG, WebConfig};
use webfetch_support::{Reply, Server};

fn loopback() -> IpAddr {
    "127.0.0.1".parse().unwrap()
}

/// A registry of the web tools whose policy allows 127.0.0.1 (and nothing else special).
fn registry() -> Registry {
    registry_with(WebConfig { network: NetworkPolicy::allow([loopback()]), ..WebConfig::default() })
}

fn registry_with(config: WebConfig) -> Registry {
    tool_std::registry_builder()
        .sets(["web"])
        .policy(DefaultPolicy::new().allow_all_external())
        .override_dependency(&WEB_CONFIG, config)
        .build()
        .unwrap()
}

/// A registry whose policy allows 127.0.0.1 and whose resolver knows only `name`, as `addresses`.
fn registry_resolving(name: &str, addresses: impl IntoIterator<Item = IpAddr>) -> Registry {
    registry_with(WebConfig {
        network: NetworkPolicy::allow([loopback()]),
        resolver: Arc::new(StaticHosts::new().with(name, addresses)),
        ..WebConfig::default()
    })
}

async fn fetch_with(registry: &Registry, arguments: Value) -> ToolMessage {
    registry.call(&ToolCall::new("call_1", "webfetch", arguments.to_string()), &ToolContext::new()).await
}

/// The JSON of a fetch that must succeed.
async fn fetch(registry: &Registry, arguments: Value) -> Value {
    let message = fetch_with(registry, arguments).await;
    assert!(!message.is_error, "expected success, got: {}", message.text());
    serde_json::from_str(&message.text()).unwrap()
}

/// The text of a fetch that must fail.
async fn fetch_err(registry: &Registry, arguments: Value) -> String {
    let message = fetch_with(registry, arguments).await;
    assert!(message.is_error, "expected an error, got: {}", message.text());
    message.text().into_owned()
}

/// The text of a refused address: `Refused to fetch {url}: {host} is {address}, {kind} address; ...`.
fn refused(url: &str, host_is_address: &str, kind: &str) -> String {
    format!(
        "Refused to fetch {url}: {host_is_address}, {kind} address; webfetch reaches only globally reachable \
         addresses unless the network policy allows others, so fetch a public URL instead"
    )
}

const SCRIPTED: &str = "<script>window.x = 1;</script><style>.a{color:red}</style><p>Text</p>";

#[tokio::test]
async fn scripts_and_styles_are_removed_and_only_the_text_is_left() {
    let server = Server::start(|_| Reply::ok("text/html", SCRIPTED)).await;
    let registry = registry();

    for format in ["markdown", "text"] {
        let output = fetch(&registry, json!({"url": server.url("/"), "output_format": format})).await;
        assert_eq!(output["content"], "Text", "{format}");
    }
}

#[tokio::test]
async fn the_html_format_keeps_markup_without_scripts_styles_and_comments() {
    let page = "<html><head><title>T</title><noscript>enable js</noscript></head><body><!-- secret -->\
                <script>window.x = 1;</script><style>.a{color:red}</style><p>Text</p></body></html>";
    let server = Server::start(move |_| Reply::ok("text/html", page)).await;

    let output = fetch(&registry(), json!({"url": server.url("/"), "output_format": "html"})).await;

    assert_eq!(output["content"], "<html><head><title>T</title></head><body><p>Text</p></body></html>");
}

#[tokio::test]
async fn the_byte_cap_applies_after_stripping() {
    let page = format!("<script>{}</script><p>Hello world</p>", "var a = 1;".repeat(1000));
    let server = Server::start(move |_| Reply::ok("text/html", page.clone())).await;
    let registry = registry();

    let whole = fetch(&registry, json!({"url": server.url("/"), "max_bytes": 11})).await;
    let cut = fetch(&registry, json!({"url": server.url("/"), "max_bytes": 5})).await;

    assert_eq!(
        (&whole["content"], &whole["truncated"], &whole["byte_size"]),
        (&json!("Hello world"), &json!(false), &json!(11))
    );
    assert_eq!((&cut["content"], &cut["truncated"], &cut["byte_size"]), (&json!("Hello"), &json!(true), &json!(11)));
}

#[tokio::test]
async fn the_byte_cap_never_splits_a_character() {
    let server = Server::start(|_| Reply::ok("text/plain; charset=utf-8", "café crème")).await;

    let output = fetch(&registry(), json!({"url": server.url("/"), "max_bytes": 4})).await;

    assert_eq!((&output["content"], &output["truncated"]), (&json!("caf"), &json!(true)));
}

#[tokio::test]
async fn a_latin1_page_is_decoded_by_its_charset() {
    let server = Server::start(|_| Reply::ok("text/html; charset=iso-8859-1", b"<p>caf\xe9</p>".to_vec())).await;

    let output = fetch(&registry(), json!({"url": server.url("/")})).await;

    assert_eq!(output["content"], "café");
}

#[tokio::test]
async fn a_meta_charset_is_honoured_when_the_header_has_none() {
    let body = b"<html><head><meta charset=\"windows-1252\"></head><body><p>na\xefve</p></body></html>".to_vec();
    let server = Server::start(move |_| Reply::ok("text/html", body.clone())).await;

    let output = fetch(&registry(), json!({"url": server.url("/")})).await;

    assert_eq!(output["content"], "naïve");
}

#[tokio::test]
async fn the_output_holds_every_field_of_the_spec() {
    let page = "<html><head><title> The  Title </title></head><body><h1>Heading</h1><p>Body</p></body></html>";
    let server = Server::start(move |_| Reply::ok("text/html; charset=utf-8", page)).await;
    let url = server.url("/page");

    let mut output = fetch(&registry(), json!({"url": url})).await;

    assert!(output["duration_ms"].is_u64());
    output.as_object_mut().unwrap().remove("duration_ms");
    assert_eq!(
        output,
        json!({
            "url": url, "final_url": url, "status": 200, "ok": true,
            "content_type": "text/html; charset=utf-8", "output_format": "markdown",
            "title": "The Title", "content": "# Heading\n\nBody", "truncated": false, "byte_size": 15,
        })
    );
}

#[tokio::test]
async fn the_text_format_puts_blocks_on_their_own_lines() {
    let page = "<body><h1>Title</h1><p>One   two\nthree</p><ul><li>a</li><li>b <b>bold</b></li></ul></body>";
    let server = Server::start(move |_| Reply::ok("text/html", page)).await;

    let output = fetch(&registry(), json!({"url": server.url("/"), "output_format": "text"})).await;

    assert_eq!(output["content"], "Title\nOne two three\na\nb bold");
}

#[tokio::test]
async fn json_is_returned_as_it_is_without_a_title() {
    let server = Server::start(|_| Reply::ok("application/json", r#"{"a": [1, 2]}"#)).await;

    let output = fetch(&registry(), json!({"url": server.url("/api")})).await;

    assert_eq!((&output["content"], &output["title"]), (&json!(r#"{"a": [1, 2]}"#), &Value::Null));
}

#[tokio::test]
async fn an_error_status_is_a_result_with_ok_false() {
    let server = Server::start(|_| Reply::with(404, &[("Content-Type", "text/plain")], "no such page")).await;

    let output = fetch(&registry(), json!({"url": server.url("/missing")})).await;

    assert_eq!(
        (&output["status"], &output["ok"], &output["content"]),
        (&json!(404), &json!(false), &json!("no such page"))
    );
}

#[tokio::test]
async fn a_missing_content_type_is_sniffed() {
    let server = Server::start(|_| Reply::with(200, &[], "<!DOCTYPE html><p>Sniffed</p>")).await;

    let output = fetch(&registry(), json!({"url": server.url("/")})).await;

    assert_eq!((&output["content_type"], &output["content"]), (&json!("text/html"), &json!("Sniffed")));
}

#[tokio::test]
async fn binary_bytes_without_a_content_type_are_refused() {
    let server = Server::start(|_| Reply::with(200, &[], vec![0x00, 0x01, 0x02, 0x03])).await;
    let url = server.url("/blob");

    assert_eq!(
        fetch_err(&registry(), json!({"url": url})).await,
        format!("Binary content at {url} (no Content-Type, and the body holds NUL bytes); webfetch reads text only")
    );
}

#[tokio::test]
async fn an_image_content_type_is_refused() {
    let server = Server::start(|_| Reply::ok("image/png", b"\x89PNG\r\n\x1a\n".to_vec())).await;
    let url = server.url("/logo.png");

    assert_eq!(
        fetch_err(&registry(), json!({"url": url})).await,
        format!(
            "Unsupported content type `image/png` at {url}; webfetch reads text (HTML, plain text, JSON, XML, \
             JavaScript, Markdown, YAML), not images or other binary files"
        )
    );
}

#[tokio::test]
async fn redirects_are_followed_to_the_final_url() {
    let server = Server::start(|request| match request.target.as_str() {
        "/old" => Reply::redirect("/middle"),
        "/middle" => Reply::redirect("/new"),
        _ => Reply::ok("text/plain", "arrived"),
    })
    .await;

    let output = fetch(&registry(), json!({"url": server.url("/old")})).await;

    assert_eq!((&output["final_url"], &output["content"]), (&json!(server.url("/new")), &json!("arrived")));
    assert_eq!(output["url"], server.url("/old"));
}

#[tokio::test]
async fn redirects_are_capped() {
    let server = Server::start(|request| {
        let n: u32 = request.target.trim_start_matches('/').parse().unwrap_or(0);
        Reply::redirect(&format!("/{}", n + 1))
    })
    .await;

    assert_eq!(
        fetch_err(&registry(), json!({"url": server.url("/0")})).await,
        format!("Too many redirects: {} still redirects after 5 hops; fetch the final URL directly", server.url("/5"))
    );
    assert_eq!(server.requests().len(), 6);
}

#[tokio::test]
async fn a_redirect_to_a_refused_address_is_refused() {
    let port = 9;
    let server = Server::start(move |_| Reply::redirect(&format!("http://127.0.0.2:{port}/admin"))).await;

    assert_eq!(
        fetch_err(&registry(), json!({"url": server.url("/")})).await,
        "Refused to fetch http://127.0.0.2:9/admin: 127.0.0.2 is 127.0.0.2, a loopback address; webfetch reaches \
         only globally reachable addresses unless the network policy allows others, so fetch a public URL instead"
    );
}

#[tokio::test]
async fn a_redirect_to_another_scheme_is_refused() {
    let server = Server::start(|_| Reply::redirect("file:///etc/passwd")).await;

    assert_eq!(
        fetch_err(&registry(), json!({"url": server.url("/")})).await,
        "Unsupported URL scheme `file` in file:///etc/passwd; webfetch fetches http:// and https:// URLs only"
    );
}

#[tokio::test]
async fn only_http_and_https_are_fetched() {
    assert_eq!(
        fetch_err(&registry(), json!({"url": "ftp://127.0.0.1/file.txt"})).await,
        "Unsupported URL scheme `ftp` in ftp://127.0.0.1/file.txt; webfetch fetches http:// and https:// URLs only"
    );
}

#[tokio::test]
async fn a_url_that_does_not_parse_is_refused() {
    assert_eq!(
        fetch_err(&registry(), json!({"url": "example.com/page"})).await,
        "Invalid URL `example.com/page`: relative URL without a base; give an absolute http:// or https:// URL"
    );
}

#[tokio::test]
async fn loopback_is_refused_by_default() {
    let server = Server::start(|_| Reply::ok("text/plain", "secret")).await;
    let url = server.url("/");

    assert_eq!(
        fetch_err(&registry_with(WebConfig::default()), json!({"url": url})).await,
        refused(&url, "127.0.0.1 is 127.0.0.1", "a loopback")
    );
    assert_eq!(server.requests(), []);
}

#[tokio::test]
async fn a_name_is_checked_on_the_addresses_it_resolves_to() {
    let config = WebConfig {
        resolver: Arc::new(StaticHosts::new().with("intranet.test", ["10.1.2.3".parse().unwrap()])),
        ..WebConfig::default()
    };

    assert_eq!(
        fetch_err(&registry_with(config), json!({"url": "http://intranet.test/wiki"})).await,
        refused("http://intranet.test/wiki", "intranet.test is 10.1.2.3", "a private")
    );
}

#[tokio::test]
async fn localhost_is_refused_after_system_resolution() {
    let server = Server::start(|_| Reply::ok("text/plain", "secret")).await;
    let url = format!("http://localhost:{}/", server.addr.port());

    let error = fetch_err(&registry_with(WebConfig::default()), json!({"url": url})).await;

    assert!(error.starts_with(&format!("Refused to fetch {url}: localhost is ")), "{error}");
    assert!(error.contains(", a loopback address;"), "{error}");
    assert_eq!(server.requests(), []);
}

#[tokio::test]
async fn a_name_resolving_to_an_allowed_address_is_fetched() {
    let server = Server::start(|_| Reply::ok("text/plain", "docs")).await;
    let registry = registry_resolving("docs.test", [loopback()]);
    let url = format!("http://docs.test:{}/", server.addr.port());

    let output = fetch(&registry, json!({"url": url})).await;

    assert_eq!(output["content"], "docs");
    assert_eq!(server.requests()[0].header("host"), Some(format!("docs.test:{}", server.addr.port()).as_str()));
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_gives_a_timeout() {
    let server = Server::start(|_| Reply::Hang).await;
    let url = server.url("/slow");

    assert_eq!(
        fetch_err(&registry(), json!({"url": url, "timeout_ms": 500})).await,
        format!(
            "timeout: no complete response from {url} within 500 ms; retry with a larger timeout_ms (at most 30000) or later"
        )
    );
}

#[tokio::test]
async fn a_closed_port_gives_connection_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);

    let error = fetch_err(&registry(), json!({"url": url})).await;

    assert!(error.starts_with(&format!("connection_refused: {url} refused the connection (")), "{error}");
    assert!(error.ends_with("); nothing listens there, check the host and port"), "{error}");
}

#[tokio::test]
async fn an_unknown_host_gives_a_dns_error() {
    let config = WebConfig { resolver: Arc::new(StaticHosts::new()), ..WebConfig::default() };

    assert_eq!(
        fetch_err(&registry_with(config), json!({"url": "http://nowhere.test/"})).await,
        "dns_error: the host of http://nowhere.test/ does not resolve (cannot resolve nowhere.test: nowhere.test is \
         not in the static hosts table); check the spelling"
    );
}

#[tokio::test]
async fn a_reset_connection_gives_connection_reset() {
    let server = Server::start(|_| Reply::Reset).await;
    let url = server.url("/");

    let error = fetch_err(&registry(), json!({"url": url})).await;

    assert!(error.starts_with(&format!("connection_reset: {url} closed the connection abruptly (")), "{error}");
}

#[tokio::test]
async fn https_to_a_plain_http_server_gives_a_tls_error() {
    let server = Server::start(|_| Reply::ok("text/plain", "plain")).await;
    let url = format!("https://{}/", server.addr);

    let error = fetch_err(&registry(), json!({"url": url})).await;

    assert!(error.starts_with(&format!("tls_error: the TLS handshake with {url} failed (")), "{error}");
}

#[tokio::test]
async fn limits_outside_their_range_are_refused() {
    let registry = registry();

    assert_eq!(
        fetch_err(&registry, json!({"url": "http://127.0.0.1/", "timeout_ms": 30001})).await,
        "invalid arguments for `webfetch`: `timeout_ms`: must be at most 30000; got 30001"
    );
    assert_eq!(
        fetch_err(&registry, json!({"url": "http://127.0.0.1/", "max_bytes": 0})).await,
        "invalid arguments for `webfetch`: `max_bytes`: must be at least 1; got 0"
    );
}

#[tokio::test]
async fn a_bad_output_format_is_refused_listing_the_choices() {
    assert_eq!(
        fetch_err(&registry(), json!({"url": "http://127.0.0.1/", "output_format": "pdf"})).await,
        "invalid arguments for `webfetch`: `output_format`: unknown variant `pdf`, expected one of `markdown`, \
         `text`, `html`"
    );
}

#[test]
fn webfetch_is_tagged_read_only_and_external() {
    let registry = registry();

    assert_eq!(registry.get("webfetch").unwrap().definition().tags, ["read_only", "external"]);
}

#[tokio::test]
async fn a_redirect_to_a_name_of_a_private_address_is_refused() {
    let server = Server::start(|_| Reply::redirect("http://intranet.test/secrets")).await;
    let registry = registry_resolving("intranet.test", ["192.168.1.10".parse().unwrap()]);

    assert_eq!(
        fetch_err(&registry, json!({"url": server.url("/")})).await,
        refused("http://intranet.test/secrets", "intranet.test is 192.168.1.10", "a private")
    );
}

#[tokio::test]
async fn the_cloud_metadata_address_is_refused_as_link_local() {
    assert_eq!(
        fetch_err(&registry(), json!({"url": "http://169.254.169.254/latest/meta-data/"})).await,
        refused("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is 169.254.169.254", "a link-local")
    );
}

#[tokio::test]
async fn ipv6_loopback_is_refused() {
    assert_eq!(
        fetch_err(&registry(), json!({"url": "http://[::1]:8080/"})).await,
        refused("http://[::1]:8080/", "[::1] is ::1", "a loopback")
    );
}

#[tokio::test]
async fn a_body_over_the_download_cap_is_cut_and_marked_truncated() {
    let server = Server::start(|_| Reply::ok("text/plain", "0123456789".repeat(10))).await;
    let config =
        WebConfig { network: NetworkPolicy::allow([loopback()]), max_download_bytes: 25, ..WebConfig::default() };

    let output = fetch(&registry_with(config), json!({"url": server.url("/")})).await;

    assert_eq!(
        (&output["content"], &output["truncated"], &output["byte_size"]),
        (&json!("0123456789012345678901234"), &json!(true), &json!(25))
    );
}

#[tokio::test]
async fn a_redirect_to_an_ipv6_form_carrying_a_refused_ipv4_address_is_refused() {
    let port = 9;
    let targets = [
        ("[::ffff:7f00:2]", "::ffff:127.0.0.2", "a loopback"),
        ("[64:ff9b::7f00:1]", "64:ff9b::7f00:1", "a loopback"),
        ("[64:ff9b:1::a00:1]", "64:ff9b:1::a00:1", "a private"),
        ("[2002:7f00:1::]", "2002:7f00:1::", "a loopback"),
        ("[2001:0:808:808::80ff:fffe]", "2001:0:808:808::80ff:fffe", "a loopback"),
    ];

    for (host, address, kind) in targets {
        let location = format!("http://{host}:{port}/admin");
        let server = Server::start({
            let location = location.clone();
            move |_| Reply::redirect(&location)
        })
        .await;

        assert_eq!(
            fetch_err(&registry(), json!({"url": server.url("/")})).await,
            refused(&location, &format!("{host} is {address}"), kind),
            "{host}"
        );
        assert_eq!(server.requests().len(), 1, "{host}");
    }
}

#[tokio::test]
async fn a_literal_documentation_address_is_refused_before_connecting() {
    assert_eq!(
        fetch_err(&registry(), json!({"url": "http://[2001:db8::1]/"})).await,
        refused("http://[2001:db8::1]/", "[2001:db8::1] is 2001:db8::1", "a documentation")
    );
}

#[tokio::test]
async fn a_name_resolving_to_a_nat64_form_of_a_private_address_is_refused() {
    let registry = registry_resolving("nat64.test", ["64:ff9b::a00:5".parse().unwrap()]);

    assert_eq!(
        fetch_err(&registry, json!({"url": "http://nat64.test/"})).await,
        refused("http://nat64.test/", "nat64.test is 64:ff9b::a00:5", "a private")
    );
}

#[tokio::test]
async fn a_name_whose_every_address_is_refused_is_refused_by_its_first_address() {
    let addresses = ["198.18.0.1", "240.0.0.1", "fe80::1"].map(|a| a.parse::<IpAddr>().unwrap());
    let registry = registry_resolving("lab.test", addresses);

    assert_eq!(
        fetch_err(&registry, json!({"url": "http://lab.test/"})).await,
        refused("http://lab.test/", "lab.test is 198.18.0.1", "a benchmarking")
    );
}

#[tokio::test]
async fn a_name_resolving_to_a_refused_and_an_allowed_address_connects_only_to_the_allowed_one() {
    let allowed = Server::start(|_| Reply::ok("text/plain", "allowed")).await;
    let other = "127.0.0.2".parse::<IpAddr>().unwrap();
    // A listener on the refused address and the same port: a connection to it would wait in its
    // backlog (and the fetch would hang, since nothing answers).
    let refused_listener = std::net::TcpListener::bind((other, allowed.addr.port())).unwrap();
    refused_listener.set_nonblocking(true).unwrap();
    let registry = registry_resolving("mixed.test", [other, loopback()]);
    let url = format!("http://mixed.test:{}/", allowed.addr.port());

    let output = fetch(&registry, json!({"url": url})).await;

    assert_eq!(output["content"], "allowed");
    assert_eq!(allowed.requests().len(), 1);
    assert_eq!(refused_listener.accept().map_err(|e| e.kind()).err(), Some(std::io::ErrorKind::WouldBlock));
}

#[tokio::test]
async fn a_reason_starting_with_a_vowel_reads_an() {
    assert_eq!(
        fetch_err(&registry(), json!({"url": "http://192.0.0.8/"})).await,
        refused("http://192.0.0.8/", "192.0.0.8 is 192.0.0.8", "an IETF protocol assignment")
    );
}
