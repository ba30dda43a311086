//! A small HTTP/1.1 server on 127.0.0.1 for the web tool tests: each connection gets one reply
//! chosen by a route function, and every request is recorded.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, ...
    pub method: String,
    /// The request target: path and query, e.g. `/html/?q=rust`.
    pub target: String,
    /// Header names lowercased, in order.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The first header with this (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// What the server does with a request.
pub enum Reply {
    /// An HTTP response; `Content-Length` and `Connection: close` are added.
    Respond { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    /// Never answer (the connection stays open until the client leaves).
    Hang,
    /// Close the connection with a TCP reset.
    Reset,
}

impl Reply {
    /// A 200 response with this content type and body.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::Respond { status: 200, headers: vec![("Content-Type".into(), content_type.into())], body: body.into() }
    }

    /// A response with a status, headers and body.
    pub fn with(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Self {
        Self::Respond {
            status,
            headers: headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect(),
            body: body.into(),
        }
    }

    /// A redirect to `location`.
    pub fn redirect(location: &str) -> Self {
        Self::with(302, &[("Location", location)], Vec::new())
    }
}

type Route = dyn Fn(&Request) -> Reply + Send + Sync;

/// The server; it runs until the test's runtime ends.
pub struct Server {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    /// Starts a server on 127.0.0.1 (a free port) answering with `route`.
    pub async fn start(route: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let route: Arc<Route> = Arc::new(route);
        let log = requests.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, route.clone(), log.clone()));
            }
        });
        Self { addr, requests }
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The requests seen so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(mut stream: TcpStream, route: Arc<Route>, log: Arc<Mutex<Vec<Request>>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if !head.starts_with(b"GET ") && !head.starts_with(b"POST ") && !head.starts_with(b"HEAD ") {
            break;
        }
    }
    let Some(request) = parse(&head) else {
        // Not HTTP (a TLS ClientHello, say): answer in plain HTTP, as a plain server would.
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
        return;
    };
    let reply = route(&request);
    log.lock().unwrap().push(request);
    match reply {
        Reply::Respond { status, headers, body } => {
            let mut out = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
            for (name, value) in headers {
                out.push_str(&format!("{name}: {value}\r\n"));
            }
            out.push_str("\r\n");
            let mut bytes = out.into_bytes();
            bytes.extend(body);
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Reply::Hang => {
            let _ = stream.read(&mut buf).await;
            std::future::pending::<()>().await;
        }
        Reply::Reset => {
            let _ = stream.set_zero_linger();
            drop(stream);
        }
    }
}

fn parse(head: &[u8]) -> Option<Request> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    if !first.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let headers = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(Request { method, target, headers })
}
