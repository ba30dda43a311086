//! The `search` tool and its backends.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::Url;
use reqwest::header::ACCEPT;
use serde::{Deserialize, Serialize};
use tokio::time::Duration;
use tool_runtime::{DependencyError, DependencyKey, ToolContext, tool};

use super::config::{SearchBackendId, SearchConfig, WEB_CONFIG, WebConfig, build_client};
use super::html::{Document, attr, collapse, has_class, tag, text_of};
use super::net::{Failure, NetErrorClass, classify};

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The page title.
    pub title: String,
    /// The page URL (absolute).
    pub url: String,
    /// The backend's excerpt, tags removed, whitespace collapsed.
    pub snippet: String,
    /// The host of `url`, lowercase (`docs.rs`).
    pub source: String,
}

/// The result of `search`, sent to the model as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchOutput {
    /// The query, as given.
    pub query: String,
    /// The backend used: `ddg` or `brave`.
    pub backend: SearchBackendId,
    /// The number of results.
    pub count: usize,
    /// The results, best first, at most `max_results`, filtered by `allowed_domains`.
    pub results: Vec<SearchHit>,
}

/// Why `search` failed. The `Display` text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query is empty or blank.
    #[error("query is empty; give the words to search for")]
    EmptyQuery,
    /// `max_results` outside 1..=20.
    #[error("max_results must be between 1 and 20, got {value}")]
    MaxResults {
        /// The value given.
        value: u64,
    },
    /// An entry of `allowed_domains` is not a domain.
    #[error("allowed_domains[{index}] `{domain}` is not a domain; give host names such as `docs.rs`")]
    BadDomain {
        /// 0-based position.
        index: usize,
        /// The entry as given.
        domain: String,
    },
    /// Brave has no API key.
    #[error("the brave backend needs an API key in the environment variable {env}; set it, or use backend ddg")]
    MissingKey {
        /// The variable's name.
        env: String,
    },
    /// A configured base URL does not parse.
    #[error("the {backend} base URL `{url}` is not a URL; fix the search configuration")]
    BaseUrl {
        /// The backend.
        backend: SearchBackendId,
        /// The configured value.
        url: String,
    },
    /// The backend answered with an error status.
    #[error("{backend} answered HTTP {status}{}", status_hint(*.status))]
    Status {
        /// The backend.
        backend: SearchBackendId,
        /// The HTTP status code.
        status: u16,
    },
    /// The backend's answer has an unexpected shape.
    #[error("{backend} sent a response this build cannot read ({message}); try the other backend")]
    Shape {
        /// The backend.
        backend: SearchBackendId,
        /// What is wrong.
        message: String,
    },
    /// A network failure; the text starts with its class.
    #[error("{class}: the request to {backend} failed ({detail})")]
    Network {
        /// The class.
        class: NetErrorClass,
        /// The backend.
        backend: SearchBackendId,
        /// The innermost cause's text.
        detail: String,
    },
}

fn status_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => "; check the API key",
        429 => "; the rate limit is reached, retry later",
        _ => "; retry later or use the other backend",
    }
}

/// A web search service. `search` returns up to `count` results, best first.
pub trait SearchBackend: Send + Sync + fmt::Debug {
    /// The backend's id.
    fn id(&self) -> SearchBackendId;

    /// Runs one query.
    ///
    /// # Errors
    /// A [`SearchError`] for a network failure, an error status or an unreadable answer.
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, SearchError>>;
}

/// DuckDuckGo's HTML results page (`{base}/html/?q=QUERY`): results are the `result__a` links
/// (DuckDuckGo's `/l/?uddg=` redirect links are unwrapped), snippets the `result__snippet`
/// elements; ads (`result--ad`) are skipped.
#[derive(Debug, Clone)]
pub struct DuckDuckGo {
    /// The base URL, e.g. `https://html.duckduckgo.com`.
    pub base_url: String,
}

impl SearchBackend for DuckDuckGo {
    fn id(&self) -> SearchBackendId {
        SearchBackendId::Ddg
    }

    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, SearchError>> {
        Box::pin(async move {
            let id = self.id();
            let url = endpoint(id, &self.base_url, "html/", &[("q", query)])?;
            let response = send(id, client.get(url).header(ACCEPT, "text/html")).await?;
            let body = response.text().await.map_err(|e| network(id, &e))?;
            // Parsing the results page is CPU-bound: off the async worker.
            tool_runtime::off_worker(move || parse_ddg(&body, count)).await.ok_or_else(|| SearchError::Network {
                class: NetErrorClass::NetworkError,
                backend: id,
                detail: "the runtime is shutting down".to_owned(),
            })
        })
    }
}

fn parse_ddg(body: &str, count: usize) -> Vec<SearchHit> {
    let document = Document::parse(body);
    let results = document.select(&|n| has_class(n, "result") && !has_class(n, "result--ad"));
    let mut hits = Vec::new();
    for result in results {
        let container = Document::from_node(&result);
        let Some(link) = container.select(&|n| tag(n) == Some("a") && has_class(n, "result__a")).into_iter().next()
        else {
            continue;
        };
        let Some(url) = attr(&link, "href").and_then(|href| unwrap_ddg_link(&href)) else { continue };
        let snippet = container
            .select(&|n| has_class(n, "result__snippet"))
            .first()
            .map(|s| collapse(&text_of(s)))
            .unwrap_or_default();
        let Some(source) = host_of(&url) else { continue };
        hits.push(SearchHit { title: collapse(&text_of(&link)), url, snippet, source });
        if hits.len() == count {
            break;
        }
    }
    hits
}

/// DuckDuckGo links are `//duckduckgo.com/l/?uddg=<encoded target>&rut=...`; others are direct.
fn unwrap_ddg_link(href: &str) -> Option<String> {
    let absolute = if href.starts_with("//") { format!("https:{href}") } else { href.to_owned() };
    let url = Url::parse(&absolute).ok()?;
    if url.path() == "/l/"
        && let Some((_, target)) = url.query_pairs().find(|(k, _)| k == "uddg")
    {
        return Url::parse(&target).ok().filter(|u| matches!(u.scheme(), "http" | "https")).map(String::from);
    }
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

/// The Brave Search API (`{base}/res/v1/web/search`), JSON `web.results[]` with `title`, `url`
/// and `description` (whose `<strong>` tags are removed).
#[derive(Debug, Clone)]
pub struct Brave {
    /// The base URL, e.g. `https://api.search.brave.com`.
    pub base_url: String,
    /// The API key (`X-Subscription-Token`).
    pub api_key: String,
}

impl SearchBackend for Brave {
    fn id(&self) -> SearchBackendId {
        SearchBackendId::Brave
    }

    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, SearchError>> {
        Box::pin(async move {
            let id = self.id();
            let count_text = count.to_string();
            let url = endpoint(id, &self.base_url, "res/v1/web/search", &[("q", query), ("count", &count_text)])?;
            let request =
                client.get(url).header(ACCEPT, "application/json").header("X-Subscription-Token", &self.api_key);
            let response = send(id, request).await?;
            let body = response.text().await.map_err(|e| network(id, &e))?;
            parse_brave(&body, count)
        })
    }
}

#[derive(Deserialize)]
struct BraveAnswer {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    description: String,
}

fn parse_brave(body: &str, count: usize) -> Result<Vec<SearchHit>, SearchError> {
    let shape = |message: String| SearchError::Shape { backend: SearchBackendId::Brave, message };
    let value: serde_json::Value = serde_json::from_str(body).map_err(|e| shape(format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(shape("the answer is not a JSON object".to_owned()));
    }
    let answer: BraveAnswer = serde_json::from_value(value).map_err(|e| shape(e.to_string()))?;
    Ok(answer
        .web
        .map(|w| w.results)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|r| {
            let source = host_of(&r.url)?;
            Some(SearchHit { title: strip_tags(&r.title), url: r.url, snippet: strip_tags(&r.description), source })
        })
        .take(count)
        .collect())
}

/// Text of an HTML fragment (entities decoded), whitespace collapsed.
fn strip_tags(fragment: &str) -> String {
    collapse(&Document::parse(fragment).text())
}

fn host_of(url: &str) -> Option<String> {
    Url::parse(url).ok()?.host_str().map(str::to_ascii_lowercase)
}

fn endpoint(backend: SearchBackendId, base: &str, path: &str, query: &[(&str, &str)]) -> Result<Url, SearchError> {
    let base_error = || SearchError::BaseUrl { backend, url: base.to_owned() };
    let mut base_url = Url::parse(base).map_err(|_| base_error())?;
    if !base_url.path().ends_with('/') {
        let path = format!("{}/", base_url.path());
        base_url.set_path(&path);
    }
    let mut url = base_url.join(path).map_err(|_| base_error())?;
    url.query_pairs_mut().extend_pairs(query);
    Ok(url)
}

async fn send(backend: SearchBackendId, request: reqwest::RequestBuilder) -> Result<reqwest::Response, SearchError> {
    let response = request.send().await.map_err(|e| network(backend, &e))?;
    if !response.status().is_success() {
        return Err(SearchError::Status { backend, status: response.status().as_u16() });
    }
    Ok(response)
}

fn network(backend: SearchBackendId, error: &reqwest::Error) -> SearchError {
    let https = error.url().is_some_and(|u| u.scheme() == "https");
    match classify(error, https) {
        Failure::Net { class, detail } => SearchError::Network { class, backend, detail },
        Failure::Refused { host, address, reason } => SearchError::Network {
            class: NetErrorClass::NetworkError,
            backend,
            detail: format!("{host} is {address}, a {reason} address"),
        },
    }
}

/// The HTTP client of `search`, per registry (the configured resolver, no address policy: the
/// base URLs are the operator's choice).
static SEARCH_CLIENT: DependencyKey<reqwest::Client> = DependencyKey::shared_async("search_client", search_client);

fn search_client(ctx: &ToolContext) -> BoxFuture<'_, Result<reqwest::Client, DependencyError>> {
    Box::pin(async move {
        let config = ctx.resolve(&WEB_CONFIG).await?;
        build_client(&config, None)
    })
}

/// The backend for `id` under `config`, with Brave's key from the configuration or the
/// environment.
///
/// # Errors
/// [`SearchError::MissingKey`] naming the variable when Brave has no key.
pub fn backend_for(id: SearchBackendId, config: &SearchConfig) -> Result<Arc<dyn SearchBackend>, SearchError> {
    Ok(match id {
        SearchBackendId::Ddg => Arc::new(DuckDuckGo { base_url: config.ddg_base_url.clone() }),
        SearchBackendId::Brave => {
            let key = config
                .brave_api_key
                .clone()
                .or_else(|| std::env::var(&config.brave_api_key_env).ok())
                .filter(|k| !k.trim().is_empty())
                .ok_or_else(|| SearchError::MissingKey { env: config.brave_api_key_env.clone() })?;
            Arc::new(Brave { base_url: config.brave_base_url.clone(), api_key: key })
        }
    })
}

/// `true` when `host` is `domain` or a subdomain of it (case-insensitive).
fn domain_matches(host: &str, domain: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// Search the web; read a result with webfetch.
#[tool(set = "web", tags(read_only, external))]
pub async fn search(
    #[arg(length(min = 1))] query: String,
    /// Results to return (default 5).
    #[arg(range(min = 1, max = 20))]
    max_results: Option<u64>,
    /// Search engine (default ddg).
    backend: Option<SearchBackendId>,
    /// Keep only results from these domains and their subdomains.
    allowed_domains: Option<Vec<String>>,
    #[depends(WEB_CONFIG)] config: WebConfig,
    #[depends(SEARCH_CLIENT)] client: reqwest::Client,
) -> Result<SearchOutput, SearchError> {
    if query.trim().is_empty() {
        return Err(SearchError::EmptyQuery);
    }
    let max_results = max_results.unwrap_or(5);
    if !(1..=20).contains(&max_results) {
        return Err(SearchError::MaxResults { value: max_results });
    }
    let count = usize::try_from(max_results).unwrap_or(20);
    let mut domains = Vec::new();
    for (index, domain) in allowed_domains.unwrap_or_default().into_iter().enumerate() {
        let normal = domain.trim().trim_start_matches("*.").trim_matches('.').to_ascii_lowercase();
        if normal.is_empty() || normal.contains(['/', ':', ' ', '@', '?', '#']) {
            return Err(SearchError::BadDomain { index, domain });
        }
        domains.push(normal);
    }
    let id = backend.unwrap_or(config.search.default_backend);
    let backend = backend_for(id, &config.search)?;
    // With a domain filter, ask for the most results so that enough remain after it.
    let ask = if domains.is_empty() { count } else { 20 };
    let timeout = Duration::from_millis(config.search.timeout_ms);
    let hits = tokio::time::timeout(timeout, backend.search(&client, query.trim(), ask)).await.map_err(|_| {
        SearchError::Network {
            class: NetErrorClass::Timeout,
            backend: id,
            detail: format!("no answer within {} ms", config.search.timeout_ms),
        }
    })??;
    let results: Vec<SearchHit> = hits
        .into_iter()
        .filter(|hit| domains.is_empty() || domains.iter().any(|d| domain_matches(&hit.source, d)))
        .take(count)
        .collect();
    Ok(SearchOutput { query, backend: id, count: results.len(), results })
}
