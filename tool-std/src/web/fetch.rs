//! The `webfetch` tool.

use std::net::IpAddr;

use futures::future::BoxFuture;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::{Duration, Instant};
use tool_runtime::{DependencyError, DependencyKey, ToolContext, tool};

use super::address::article;
use super::config::{WEB_CONFIG, WebConfig, build_client};
use super::html::Document;
use super::net::{Failure, NetErrorClass, NetworkPolicy, classify};

/// What `webfetch` returns the content as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// HTML converted to Markdown (the default); other text as it is.
    #[default]
    #[schemars(description = "")]
    Markdown,
    /// The visible text of HTML, one line per block; other text as it is.
    #[schemars(description = "visible text, one line per block")]
    Text,
    /// The HTML itself (scripts, styles and comments removed); other text as it is.
    #[schemars(description = "HTML without scripts, styles and comments")]
    Html,
}

/// The result of `webfetch`, sent to the model as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebFetchOutput {
    /// The URL asked for, as given.
    pub url: String,
    /// The URL of the response, after redirects.
    pub final_url: String,
    /// The HTTP status code of the response.
    pub status: u16,
    /// `true` for a 2xx status. Other statuses are results too (their body is the content).
    pub ok: bool,
    /// The `Content-Type` header, or the sniffed type (`text/html`, `text/plain`) when there is none.
    pub content_type: String,
    /// The form of `content`.
    pub output_format: OutputFormat,
    /// The HTML `<title>`, `null` for other content or a page without one.
    pub title: Option<String>,
    /// The content, at most `max_bytes` UTF-8 bytes (cut at a character boundary).
    pub content: String,
    /// `true` when `content` was cut to `max_bytes`, or the body was longer than the download cap.
    pub truncated: bool,
    /// The size of the whole converted content in UTF-8 bytes, before the `max_bytes` cut.
    pub byte_size: usize,
    /// Milliseconds from the first request to the end of the body.
    pub duration_ms: u64,
}

/// Why `webfetch` failed. The `Display` text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The URL does not parse.
    #[error("Invalid URL `{url}`: {message}; give an absolute http:// or https:// URL")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// The parser's message.
        message: String,
    },
    /// A scheme other than http or https (also after a redirect).
    #[error("Unsupported URL scheme `{scheme}` in {url}; webfetch fetches http:// and https:// URLs only")]
    Scheme {
        /// The URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// A numeric argument outside its range.
    #[error("{field} must be between {min} and {max}, got {value}")]
    OutOfRange {
        /// The argument's name.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The smallest accepted value.
        min: u64,
        /// The largest accepted value.
        max: u64,
    },
    /// The network policy refuses the address (also after a redirect).
    #[error(
        "Refused to fetch {url}: {host} is {address}, {} {reason} address; webfetch reaches only globally reachable \
         addresses unless the network policy allows others, so fetch a public URL instead",
        article(.reason)
    )]
    AddressRefused {
        /// The URL of the refused hop.
        url: String,
        /// Its host.
        host: String,
        /// The refused address.
        address: IpAddr,
        /// The kind of address (see [`blocked_reason`](super::blocked_reason)).
        reason: &'static str,
    },
    /// More redirects than allowed.
    #[error("Too many redirects: {url} still redirects after {max} hops; fetch the final URL directly")]
    TooManyRedirects {
        /// The last URL that redirected.
        url: String,
        /// The cap.
        max: usize,
    },
    /// A redirect whose `Location` is not a URL.
    #[error("Bad redirect from {url}: Location `{location}` is not a URL")]
    BadRedirect {
        /// The URL that redirected.
        url: String,
        /// The header's value.
        location: String,
    },
    /// A content type that is not text.
    #[error(
        "Unsupported content type `{content_type}` at {url}; webfetch reads text (HTML, plain text, JSON, XML, \
         JavaScript, Markdown, YAML), not images or other binary files"
    )]
    ContentType {
        /// The final URL.
        url: String,
        /// The `Content-Type` header.
        content_type: String,
    },
    /// No content type and the bytes are binary.
    #[error("Binary content at {url} (no Content-Type, and the body holds NUL bytes); webfetch reads text only")]
    Binary {
        /// The final URL.
        url: String,
    },
    /// A network failure; the text starts with its class.
    #[error("{class}: {}", network_text(*.class, .url, .detail, *.timeout_ms, *.max_timeout_ms))]
    Network {
        /// The class.
        class: NetErrorClass,
        /// The URL of the failing request.
        url: String,
        /// The innermost cause's text.
        detail: String,
        /// The call's time limit in milliseconds.
        timeout_ms: u64,
        /// The largest time limit a call may ask for.
        max_timeout_ms: u64,
    },
}

fn network_text(class: NetErrorClass, url: &str, detail: &str, timeout_ms: u64, max_timeout_ms: u64) -> String {
    match class {
        NetErrorClass::Timeout => format!(
            "no complete response from {url} within {timeout_ms} ms; retry with a larger timeout_ms (at most \
             {max_timeout_ms}) or later"
        ),
        NetErrorClass::DnsError => format!("the host of {url} does not resolve ({detail}); check the spelling"),
        NetErrorClass::TlsError => format!("the TLS handshake with {url} failed ({detail})"),
        NetErrorClass::ConnectionRefused => {
            format!("{url} refused the connection ({detail}); nothing listens there, check the host and port")
        }
        NetErrorClass::ConnectionReset => format!("{url} closed the connection abruptly ({detail}); retry later"),
        NetErrorClass::NetworkError => format!("the request to {url} failed ({detail})"),
    }
}

/// The HTTP client of `webfetch`, per registry: no automatic redirects, no proxy, the
/// configured resolver filtered by the network policy.
static FETCH_CLIENT: DependencyKey<reqwest::Client> = DependencyKey::shared_async("webfetch_client", fetch_client);

fn fetch_client(ctx: &ToolContext) -> BoxFuture<'_, Result<reqwest::Client, DependencyError>> {
    Box::pin(async move {
        let config = ctx.resolve(&WEB_CONFIG).await?;
        build_client(&config, Some(config.network.clone()))
    })
}

/// Fetch the text of an http(s) URL. Non-text content and non-public addresses (loopback,
/// private) are refused.
#[tool(set = "web", tags(read_only, external))]
pub async fn webfetch(
    /// An absolute URL.
    url: String,
    /// How HTML is returned (default markdown).
    output_format: Option<OutputFormat>,
    /// Time limit in milliseconds (default 10000).
    #[arg(range(min = 1, max = 30000))]
    timeout_ms: Option<u64>,
    /// Most content returned in bytes (default 200000).
    #[arg(range(min = 1, max = 1000000))]
    max_bytes: Option<u64>,
    #[depends(WEB_CONFIG)] config: WebConfig,
    #[depends(FETCH_CLIENT)] client: reqwest::Client,
) -> Result<WebFetchOutput, FetchError> {
    let output_format = output_format.unwrap_or_default();
    let timeout_ms = timeout_ms.unwrap_or(config.default_timeout_ms);
    if timeout_ms == 0 || timeout_ms > config.max_timeout_ms {
        return Err(FetchError::OutOfRange {
            field: "timeout_ms",
            value: timeout_ms,
            min: 1,
            max: config.max_timeout_ms,
        });
    }
    let max_bytes = max_bytes.unwrap_or(config.default_max_bytes as u64);
    if max_bytes == 0 || max_bytes > config.max_max_bytes as u64 {
        return Err(FetchError::OutOfRange {
            field: "max_bytes",
            value: max_bytes,
            min: 1,
            max: config.max_max_bytes as u64,
        });
    }
    let parsed =
        Url::parse(url.trim()).map_err(|e| FetchError::InvalidUrl { url: url.clone(), message: e.to_string() })?;

    let start = Instant::now();
    let mut current = parsed.to_string();
    let fetched = tokio::time::timeout(
        Duration::from_millis(timeout_ms),
        fetch(&client, &config, parsed, &mut current, timeout_ms),
    )
    .await;
    let fetched = match fetched {
        Ok(result) => result?,
        Err(_elapsed) => {
            return Err(FetchError::Network {
                class: NetErrorClass::Timeout,
                url: current,
                detail: String::new(),
                timeout_ms,
                max_timeout_ms: config.max_timeout_ms,
            });
        }
    };
    let duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);

    // Decoding, parsing and rendering up to the download cap is CPU-bound: off the async worker.
    let max_timeout_ms = config.max_timeout_ms;
    let final_url = fetched.final_url.clone();
    tool_runtime::off_worker(move || render(url, fetched, output_format, max_bytes, duration_ms)).await.ok_or_else(
        || FetchError::Network {
            class: NetErrorClass::NetworkError,
            url: final_url,
            detail: "the runtime is shutting down".to_owned(),
            timeout_ms,
            max_timeout_ms,
        },
    )
}

/// The tool's output for a fetched body: decoded to text, HTML parsed and rendered in
/// `output_format`, cut to `max_bytes` bytes (on a char boundary).
fn render(
    url: String,
    fetched: Fetched,
    output_format: OutputFormat,
    max_bytes: u64,
    duration_ms: u64,
) -> WebFetchOutput {
    let (content_type, is_html) = match &fetched.content_type {
        Some(header) => (header.clone(), is_html_type(&mime_essence(header))),
        None if sniff_html(&fetched.body) => ("text/html".to_owned(), true),
        None => ("text/plain".to_owned(), false),
    };
    let text = decode(&fetched.body, fetched.content_type.as_deref(), is_html);
    let (title, content) = if is_html {
        let document = Document::parse(&text);
        let content = match output_format {
            OutputFormat::Markdown => document.markdown(),
            OutputFormat::Text => document.text(),
            OutputFormat::Html => document.html(),
        };
        (document.title(), content)
    } else {
        (None, text)
    };
    let byte_size = content.len();
    let cap = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let cut = content.len() > cap;
    let content = if cut { content[..content.floor_char_boundary(cap)].to_owned() } else { content };
    WebFetchOutput {
        url,
        final_url: fetched.final_url,
        status: fetched.status,
        ok: (200..300).contains(&fetched.status),
        content_type,
        output_format,
        title,
        content,
        truncated: cut || fetched.body_cut,
        byte_size,
        duration_ms,
    }
}

struct Fetched {
    final_url: String,
    status: u16,
    content_type: Option<String>,
    body: Vec<u8>,
    body_cut: bool,
}

/// Follows redirects by hand (each hop checked), checks the content type, reads the body up to
/// the download cap. `current` tracks the URL being fetched, for the timeout's message.
async fn fetch(
    client: &reqwest::Client,
    config: &WebConfig,
    mut url: Url,
    current: &mut String,
    timeout_ms: u64,
) -> Result<Fetched, FetchError> {
    let mut redirects = 0;
    let mut response = loop {
        *current = url.to_string();
        check_hop(&url, &config.network)?;
        let https = url.scheme() == "https";
        let response = client
            .get(url.clone())
            .header(ACCEPT, "text/html, text/markdown;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.5")
            .send()
            .await
            .map_err(|e| request_error(&e, &url, https, timeout_ms, config))?;
        let location = response.headers().get(LOCATION).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        match location {
            Some(location) if response.status().is_redirection() => {
                if redirects == config.max_redirects {
                    return Err(FetchError::TooManyRedirects { url: url.to_string(), max: config.max_redirects });
                }
                url = url
                    .join(&location)
                    .map_err(|_| FetchError::BadRedirect { url: url.to_string(), location: location.clone() })?;
                redirects += 1;
            }
            _ => break response,
        }
    };
    let final_url = response.url().to_string();
    let content_type = response.headers().get(CONTENT_TYPE).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if let Some(header) = &content_type
        && !is_textual(&mime_essence(header))
    {
        return Err(FetchError::ContentType { url: final_url, content_type: header.clone() });
    }
    let https = url.scheme() == "https";
    let mut body = Vec::new();
    let mut body_cut = false;
    while let Some(chunk) = response.chunk().await.map_err(|e| request_error(&e, &url, https, timeout_ms, config))? {
        let room = config.max_download_bytes - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            body_cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    if content_type.is_none() && body[..body.len().min(8192)].contains(&0) {
        return Err(FetchError::Binary { url: final_url });
    }
    Ok(Fetched { final_url, status: response.status().as_u16(), content_type, body, body_cut })
}

/// The scheme must be http or https; an IP-literal host must be allowed by the policy (names are
/// checked when they resolve).
fn check_hop(url: &Url, policy: &NetworkPolicy) -> Result<(), FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::Scheme { url: url.to_string(), scheme: url.scheme().to_owned() });
    }
    let address = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        Some(url::Host::Domain(_)) => return Ok(()),
        None => return Err(FetchError::InvalidUrl { url: url.to_string(), message: "no host".to_owned() }),
    };
    match policy.refusal(address) {
        Some(reason) => Err(FetchError::AddressRefused {
            url: url.to_string(),
            host: url.host_str().unwrap_or_default().to_owned(),
            address,
            reason,
        }),
        None => Ok(()),
    }
}

fn request_error(error: &reqwest::Error, url: &Url, https: bool, timeout_ms: u64, config: &WebConfig) -> FetchError {
    match classify(error, https) {
        Failure::Refused { host, address, reason } => {
            FetchError::AddressRefused { url: url.to_string(), host, address, reason }
        }
        Failure::Net { class, detail } => FetchError::Network {
            class,
            url: url.to_string(),
            detail,
            timeout_ms,
            max_timeout_ms: config.max_timeout_ms,
        },
    }
}

/// The lowercase `type/subtype` of a `Content-Type` value.
fn mime_essence(header: &str) -> String {
    header.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// Text-like types: `text/*`, JSON, XML (and `+json`, `+xml`), JavaScript, Markdown, YAML.
fn is_textual(essence: &str) -> bool {
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/markdown"
                | "application/x-markdown"
                | "application/yaml"
                | "application/x-yaml"
                | "application/x-ndjson"
        )
}

fn is_html_type(essence: &str) -> bool {
    matches!(essence, "text/html" | "application/xhtml+xml")
}

fn sniff_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).trim_start().to_ascii_lowercase();
    head.starts_with("<!doctype html")
        || head.starts_with("<html")
        || head.starts_with("<head")
        || head.starts_with("<body")
}

/// Decodes the body: the `charset` of the header, else (HTML) a `<meta charset>` in the first
/// 1024 bytes, else a byte order mark, else UTF-8. Undecodable bytes become U+FFFD.
fn decode(body: &[u8], content_type: Option<&str>, is_html: bool) -> String {
    let label = content_type.and_then(charset_param).or_else(|| if is_html { meta_charset(body) } else { None });
    let encoding = label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes())).unwrap_or(encoding_rs::UTF_8);
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        (name.trim().eq_ignore_ascii_case("charset")).then(|| value.trim().trim_matches(['"', '\'']).to_owned())
    })
}

fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let rest = head[at..].trim_start_matches(['"', '\'']);
    let end =
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))).unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_owned())
}
