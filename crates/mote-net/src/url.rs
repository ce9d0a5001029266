//! `https://host:port/path` URLs, the only form `mote get` takes.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::Error;

/// A parsed URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// Host name or IP literal (without brackets).
    pub host: String,
    /// Port (443 when absent).
    pub port: u16,
    /// Path, starting with `/`.
    pub path: String,
}

impl Url {
    /// Parses `https://host[:port][/path]`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let rest = s
            .strip_prefix("https://")
            .ok_or_else(|| Error::new(format!("{s}: only https:// URLs are supported")))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6.find(']').ok_or_else(|| Error::new(format!("{s}: unclosed '['")))?;
            let (h, tail) = v6.split_at(end);
            let port =
                tail.strip_prefix("]:").or_else(|| tail.strip_prefix(']').filter(|t| t.is_empty()));
            (h, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        let port = match port {
            Some("") | None => 443,
            Some(p) => p.parse().map_err(|_| Error::new(format!("{s}: bad port {p:?}")))?,
        };
        if host.is_empty() {
            return Err(Error::new(format!("{s}: no host")));
        }
        Ok(Self { host: host.to_string(), port, path: path.to_string() })
    }

    /// The first address the host resolves to.
    pub fn resolve(&self) -> Result<SocketAddr, Error> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| Error::new(format!("{}: {e}", self.host)))?
            .next()
            .ok_or_else(|| Error::new(format!("{}: no address", self.host)))
    }

    /// The file name responses are saved under: the path's last segment.
    pub fn file_name(&self) -> Result<String, Error> {
        let name = self.path.rsplit('/').next().unwrap_or("");
        if name.is_empty() || name == "." || name == ".." {
            return Err(Error::new(format!("{}: the path names no file", self.path)));
        }
        Ok(name.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_interop_forms() {
        let u = Url::parse("https://server4:443/file.bin").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("server4", 443, "/file.bin"));
        let u = Url::parse("https://[::1]:4433/a/b").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("::1", 4433, "/a/b"));
        assert_eq!(u.file_name().unwrap(), "b");
        let u = Url::parse("https://127.0.0.1").unwrap();
        assert_eq!((u.port, u.path.as_str()), (443, "/"));
        assert!(u.file_name().is_err());
        assert!(Url::parse("http://x/y").is_err());
        assert!(Url::parse("https://x:70000/y").is_err());
        assert!(Url::parse("https://:1/y").is_err());
    }
}
