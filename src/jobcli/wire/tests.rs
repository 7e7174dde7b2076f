//! URL building, the header check, the address checks and redirect
//! targets, against what CPython 3.11's urllib does with the same input.

use super::*;

#[test]
fn quote_plus_is_form_encoding() {
    assert_eq!(quote_plus("a b/c"), "a+b%2Fc");
    assert_eq!(quote_plus("é&=+?#%~_.-"), "%C3%A9%26%3D%2B%3F%23%25~_.-");
    assert_eq!(quote_plus("日本 x\t\n"), "%E6%97%A5%E6%9C%AC+x%09%0A");
    assert_eq!(quote_plus("AZaz09"), "AZaz09");
    assert_eq!(quote_plus(""), "");
}

#[test]
fn the_request_url_drops_absent_parameters() {
    let q = |pairs: &[(&'static str, Option<&str>)]| -> Vec<(&'static str, Option<PyString>)> {
        pairs
            .iter()
            .map(|(k, v)| (*k, v.map(PyString::from)))
            .collect()
    };
    assert_eq!(
        request_url(
            "http://h:1",
            "/v1/kv/get",
            &q(&[("scope", Some("a b/c")), ("key", Some("é&=+?#%~_.-"))])
        ),
        Ok("http://h:1/v1/kv/get?scope=a+b%2Fc&key=%C3%A9%26%3D%2B%3F%23%25~_.-".to_owned())
    );
    assert_eq!(
        request_url(
            "http://h:1///",
            "/v1/kv/get",
            &q(&[("scope", None), ("key", Some("k"))])
        ),
        Ok("http://h:1/v1/kv/get?key=k".to_owned())
    );
    assert_eq!(
        request_url("http://h:1/", "/v1/kv/list", &q(&[("scope", None)])),
        Ok("http://h:1/v1/kv/list".to_owned())
    );
    assert_eq!(
        request_url("http://h:1", "/v1/secret/list", &[]),
        Ok("http://h:1/v1/secret/list".to_owned())
    );
    // An empty scope is sent (`?scope=`), as given.
    assert_eq!(
        request_url("http://h:1", "/v1/kv/list", &q(&[("scope", Some(""))])),
        Ok("http://h:1/v1/kv/list?scope=".to_owned())
    );
    // A surrogate-escaped argument cannot be encoded.
    let bad = vec![("scope", Some(PyString::from_code_points([0x61, 0xdcff])))];
    assert_eq!(
        request_url("http://h:1", "/v1/kv/list", &bad),
        Err(CliError(
            "'a\\udcff' is not valid UTF-8, so it cannot be sent to the state endpoint".to_owned()
        ))
    );
}

#[test]
fn the_token_must_fit_a_header() {
    assert_eq!(
        authorization(&PyString::from("abc\tdef"), "W"),
        Ok(b"Bearer abc\tdef".to_vec())
    );
    assert_eq!(
        authorization(&PyString::from("é"), "W"),
        Ok(b"Bearer \xc3\xa9".to_vec())
    );
    let refused = CliError(
        "cannot send a request to W: the Authorization header holds a character that HTTP does \
         not allow"
            .to_owned(),
    );
    for bad in ["abc\n", "a\rb", "\u{0}", "\u{7f}", "\u{1f}"] {
        assert_eq!(
            authorization(&PyString::from(bad), "W"),
            Err(refused.clone()),
            "{bad:?}"
        );
    }
    assert_eq!(
        authorization(&PyString::from_code_points([0x61, 0xdcff]), "W"),
        Err(refused)
    );
}

fn target_of(url: &str) -> Result<Target, String> {
    target(url, "W").map_err(|e| e.0)
}

/// The messages are urllib's and http.client's for the same addresses
/// (webclient.send of the original, CPython 3.11).
#[test]
fn addresses_are_checked_like_urllib() {
    let cases: &[(&str, &str)] = &[
        (
            "foo/v1/kv/get",
            "cannot send a request to W: the address is not a valid URL: unknown url type: \
             'foo/v1/kv/get'",
        ),
        (
            "localhost:8080/v1/kv/get",
            "cannot send a request to W: the address is not an http:// or https:// URL",
        ),
        (
            "ftp://h/v1",
            "cannot send a request to W: the address is not an http:// or https:// URL",
        ),
        ("http:///v1/kv/get", "cannot reach W: no host given"),
        ("http:127.0.0.1/v1", "cannot reach W: no host given"),
        (
            "http://h:abc/v1",
            "cannot send a request to W: the address is not a valid URL: nonnumeric port: 'abc'",
        ),
        (
            "http://h h:1/v1",
            "cannot send a request to W: the address is not a valid URL: URL can't contain \
             control characters. 'h h' (found at least ' ')",
        ),
        (
            "http://127.0.0.1:1/a b/v1",
            "cannot send a request to W: the address is not a valid URL: URL can't contain \
             control characters. '/a b/v1' (found at least ' ')",
        ),
        (
            "http://h:70000/v1",
            "cannot reach W: port 70000 is outside 0-65535",
        ),
    ];
    for (url, message) in cases {
        assert_eq!(target_of(url), Err((*message).to_owned()), "{url}");
    }
}

#[test]
fn addresses_urllib_accepts() {
    let t = |url: &str| target_of(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    assert_eq!(
        t("http://127.0.0.1:8080/v1/kv/get?key=k"),
        Target {
            scheme: Scheme::Http,
            host: "127.0.0.1".into(),
            port: 8080,
            selector: "/v1/kv/get?key=k".into()
        }
    );
    assert_eq!(
        t("http://127.0.0.1:8080/v1/x").url(),
        "http://127.0.0.1:8080/v1/x"
    );
    // An empty port is the default; so is none.
    assert_eq!(t("http://127.0.0.1:/v1/x").port, 80);
    assert_eq!(t("https://h/v1/x").port, 443);
    // int() reads the port.
    assert_eq!(t("http://127.0.0.1:+1/v1").port, 1);
    // Case-insensitive scheme; surrounding whitespace and the fragment
    // go.
    assert_eq!(t("HTTPS://h:2/v1").scheme, Scheme::Https);
    assert_eq!(t("  http://h:1/v1  ").selector, "/v1");
    assert_eq!(t("http://h:1/v1#frag x").selector, "/v1");
    // IPv6 literals, bracketed again for the client.
    let v6 = t("http://[::1]:9/v1");
    assert_eq!((v6.host.as_str(), v6.port), ("::1", 9));
    assert_eq!(v6.url(), "http://[::1]:9/v1");
    assert_eq!(t("http://[::1]/v1").port, 80);
    // A base path stays in front of the API path.
    assert_eq!(
        t("http://h:1/prefix/v1/kv/get").selector,
        "/prefix/v1/kv/get"
    );
    assert_eq!(t("http://h:1?x").selector, "/?x");
}

#[test]
fn urljoin_like_python() {
    let base = "http://127.0.0.1:8080/v1/kv/get?scope=s&key=k";
    let cases = [
        ("http://other/x", "http://other/x"),
        ("https://Example.COM", "https://Example.COM"),
        ("//evil:1/p", "http://evil:1/p"),
        ("/v2/a?b=c", "http://127.0.0.1:8080/v2/a?b=c"),
        ("?x=1", "http://127.0.0.1:8080/v1/kv/get?x=1"),
        (
            "#frag",
            "http://127.0.0.1:8080/v1/kv/get?scope=s&key=k#frag",
        ),
        ("next", "http://127.0.0.1:8080/v1/kv/next"),
        ("../up", "http://127.0.0.1:8080/v1/up"),
        ("./same", "http://127.0.0.1:8080/v1/kv/same"),
        ("a/../b", "http://127.0.0.1:8080/v1/kv/b"),
        ("..", "http://127.0.0.1:8080/v1/"),
        (".", "http://127.0.0.1:8080/v1/kv/"),
        ("a/./b/../../c?q#f", "http://127.0.0.1:8080/v1/kv/c?q#f"),
        ("ftp://x", "ftp://x"),
        ("mailto:a@b", "mailto:a@b"),
        ("x:y", "x:y"),
    ];
    for (location, want) in cases {
        assert_eq!(urljoin(base, location), want, "{location}");
    }
    assert_eq!(urljoin("http://h:1", "rel"), "http://h:1/rel");
    assert_eq!(urljoin("http://h:1/a/b/c", "../../../../x"), "http://h:1/x");
}

#[test]
fn only_a_3xx_with_a_location_is_a_redirect_error() {
    let full = "http://h:1/v1/kv/get?key=k";
    assert_eq!(
        redirect_error("W", 302, full, Some("/login")),
        Some(CliError(
            "W redirects to 'http://h:1/login', which this client does not follow".to_owned()
        ))
    );
    assert_eq!(
        redirect_error("W", 307, full, Some("https://x/it's")),
        Some(CliError(
            "W redirects to \"https://x/it's\", which this client does not follow".to_owned()
        ))
    );
    assert_eq!(redirect_error("W", 302, full, None), None);
    assert_eq!(redirect_error("W", 302, full, Some("")), None);
    assert_eq!(redirect_error("W", 200, full, Some("/x")), None);
    assert_eq!(redirect_error("W", 404, full, Some("/x")), None);
}
