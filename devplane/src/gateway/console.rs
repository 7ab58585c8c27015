//! The console's files on the API's own origin (docs/console.md, "Building and serving it"):
//! `--console DIR` serves DIR under `/console/`, `--console-config FILE` as
//! `/console/config.json`, with the Content-Security-Policy and headers CloudFront adds on AWS.
//! Same origin: the console calls `/v1/...` relatively and the API needs no CORS.

use std::path::{Component, Path, PathBuf};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Response, StatusCode};

/// The console's files and its configuration.
pub struct Console {
    /// Canonical: every file served is under it.
    dir: PathBuf,
    config: PathBuf,
    csp: String,
}

/// The prefix the console is served under.
pub const PREFIX: &str = "/console";

impl Console {
    /// `dir` must exist; the CSP's Cognito origin is the config's `cognitoEndpoint`.
    pub fn new(dir: &Path, config: &Path) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(config)?;
        let endpoint = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|value| value["cognitoEndpoint"].as_str().map(str::to_owned))
            .unwrap_or_default();
        Ok(Console {
            dir: dir.canonicalize()?,
            config: config.to_owned(),
            csp: content_security_policy(&origin(&endpoint)),
        })
    }

    /// `None` when `path` is not the console's; else its answer (`Err(())`: the gateway's 404).
    pub fn answer(&self, method: &Method, path: &str) -> Option<Result<Response<Full<Bytes>>, ()>> {
        let rest = path.strip_prefix(PREFIX)?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        if method != Method::GET && method != Method::HEAD {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return Some(Ok(response));
        }
        if rest.is_empty() {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::PERMANENT_REDIRECT;
            response
                .headers_mut()
                .insert(header::LOCATION, HeaderValue::from_static("/console/"));
            return Some(Ok(response));
        }
        let file = match rest {
            "/" => Some(self.dir.join("index.html")),
            "/config.json" => Some(self.config.clone()),
            _ => self.file_under(&rest[1..]),
        };
        let Some((body, name)) = file.and_then(|file| {
            let body = std::fs::read(&file).ok()?;
            Some((body, file))
        }) else {
            return Some(Err(()));
        };
        let body = if method == Method::HEAD {
            Bytes::new()
        } else {
            Bytes::from(body)
        };
        Some(Ok(self.file_response(&name, rest, body)))
    }

    /// The regular file `relative` (percent-decoded) names under the directory, if it stays there.
    fn file_under(&self, relative: &str) -> Option<PathBuf> {
        let decoded = percent_decode(relative)?;
        let path = Path::new(&decoded);
        if decoded.contains('\\')
            || !path
                .components()
                .all(|part| matches!(part, Component::Normal(_)))
        {
            return None;
        }
        let file = self.dir.join(path).canonicalize().ok()?;
        (file.starts_with(&self.dir) && file.is_file()).then_some(file)
    }

    fn file_response(&self, file: &Path, rest: &str, body: Bytes) -> Response<Full<Bytes>> {
        let mut response = Response::new(Full::new(body));
        let headers = response.headers_mut();
        let text =
            |value: &str| HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static(""));
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(content_type(file)),
        );
        let cache = if rest.starts_with("/assets/") {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        };
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        headers.insert(header::CONTENT_SECURITY_POLICY, text(&self.csp));
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        response
    }
}

/// The policy of docs/console.md, naming `cognito` (an origin, or nothing) in `connect-src`.
pub fn content_security_policy(cognito: &str) -> String {
    let connect = if cognito.is_empty() {
        "'self'".to_owned()
    } else {
        format!("'self' {cognito}")
    };
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; \
         connect-src {connect}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; \
         object-src 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
    )
}

/// `scheme://host[:port]` of a URL; empty when it has none.
fn origin(url: &str) -> String {
    match url.parse::<hyper::Uri>() {
        Ok(uri) => match (uri.scheme_str(), uri.authority()) {
            (Some(scheme @ ("http" | "https")), Some(authority)) => {
                format!("{scheme}://{authority}")
            }
            _ => String::new(),
        },
        Err(_) => String::new(),
    }
}

fn content_type(file: &Path) -> &'static str {
    match file
        .extension()
        .and_then(|ext| ext.to_str())
        .unwrap_or_default()
    {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// `%XX` sequences decoded; `None` for a malformed one or a result that is not UTF-8 or holds NUL.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out)
        .ok()
        .filter(|text| !text.contains('\0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn console() -> (tempdir::Dir, Console) {
        let root = tempdir::Dir::new();
        let dir = root.0.join("dist");
        std::fs::create_dir_all(dir.join("assets")).unwrap();
        std::fs::write(dir.join("index.html"), "<!doctype html>").unwrap();
        std::fs::write(dir.join("assets/app-1.js"), "x").unwrap();
        std::fs::write(dir.join("assets/app-1.css"), "x").unwrap();
        std::fs::write(root.0.join("secret.txt"), "not served").unwrap();
        let config = root.0.join("config.json");
        std::fs::write(&config, r#"{"cognitoEndpoint": "http://127.0.0.1:5000/"}"#).unwrap();
        let console = Console::new(&dir, &config).unwrap();
        (root, console)
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Self {
                let path = std::env::temp_dir().join(format!("console-{}", uuid::Uuid::new_v4()));
                std::fs::create_dir_all(&path).unwrap();
                Dir(path)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    fn get(console: &Console, path: &str) -> Option<Result<Response<Full<Bytes>>, ()>> {
        console.answer(&Method::GET, path)
    }

    #[test]
    fn the_console_is_served_with_its_types_and_headers() {
        let (_root, console) = console();
        let index = get(&console, "/console/").unwrap().unwrap();
        assert_eq!(index.status(), StatusCode::OK);
        assert_eq!(
            index.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        assert_eq!(index.headers()[header::CACHE_CONTROL], "no-cache");
        let csp = index.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(
            csp.contains("connect-src 'self' http://127.0.0.1:5000;"),
            "{csp}"
        );
        assert!(!csp.contains("unsafe-") && !csp.contains('*'), "{csp}");
        assert_eq!(index.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(index.headers()[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(index.headers()[header::REFERRER_POLICY], "no-referrer");
        let script = get(&console, "/console/assets/app-1.js").unwrap().unwrap();
        assert_eq!(
            script.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            script.headers()[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        let style = get(&console, "/console/assets/app-1.css").unwrap().unwrap();
        assert_eq!(
            style.headers()[header::CONTENT_TYPE],
            "text/css; charset=utf-8"
        );
        let config = get(&console, "/console/config.json").unwrap().unwrap();
        assert_eq!(config.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(config.headers()[header::CACHE_CONTROL], "no-cache");
    }

    #[test]
    fn console_without_its_slash_is_a_308_and_other_methods_405() {
        let (_root, console) = console();
        for method in [Method::GET, Method::HEAD] {
            let redirect = console.answer(&method, "/console").unwrap().unwrap();
            assert_eq!(redirect.status(), StatusCode::PERMANENT_REDIRECT);
            assert_eq!(redirect.headers()[header::LOCATION], "/console/");
        }
        let refused = console.answer(&Method::POST, "/console/").unwrap().unwrap();
        assert_eq!(refused.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(refused.headers()[header::ALLOW], "GET, HEAD");
    }

    #[test]
    fn no_path_leaves_the_directory_and_missing_files_are_the_gateways_404() {
        let (_root, console) = console();
        for path in [
            "/console/../secret.txt",
            "/console/%2e%2e/secret.txt",
            "/console/%2E%2E%2Fsecret.txt",
            "/console/assets/../../secret.txt",
            "/console/..%5csecret.txt",
            "/console/assets/",
            "/console/assets",
            "/console/missing.js",
            "/console/%zz",
            "/console/a%00b",
            "/console//etc/passwd",
        ] {
            assert!(matches!(get(&console, path), Some(Err(()))), "{path}");
        }
    }

    #[test]
    fn other_paths_are_not_the_consoles() {
        let (_root, console) = console();
        for path in ["/v1/agents", "/consoles", "/console.json", "/"] {
            assert!(get(&console, path).is_none(), "{path}");
        }
    }
}
