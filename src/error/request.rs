//! A failed request to an API server, in the words kubectl uses for it (kubectl's
//! `cmd/util.StandardErrorMessage`): the server's own answer as `Error from server (Reason):
//! message`, a 401 as `You must be logged in to the server (message)`, a refused connection as
//! `The connection to the server HOST was refused - did you specify the right host or port?`,
//! anything else on the way as `Unable to connect to the server: why`. kube's own texts are never
//! shown as they are: they carry Rust debug output (`ApiError: ... (Status { status:
//! Some(Failure), .. })`) and the names of layers (`ServiceError: client error (Connect)`).
use std::error::Error as StdError;

use kube::core::Status;

/// What a failed request comes down to: what the user does next depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 401: the server did not accept the credentials.
    Unauthorized,
    /// 403: the credentials are fine, RBAC does not allow the request.
    Forbidden,
    /// Any other answer of the server (NotFound, Conflict, Invalid, ...).
    Answered,
    /// Nothing listens at the server's address.
    Refused,
    /// The TLS handshake failed: a certificate not trusted, expired, or for another name.
    Tls,
    /// The credentials could not be had (an exec plugin failed, a token file is unreadable).
    Credentials,
    /// Anything else on the way to the server (no such host, a connection cut, ...).
    Unreachable,
}

/// kube's reason for an error answer whose body was not a `Status` (a proxy's text, an HTML
/// page): the HTTP status code is then all the server said.
const UNPARSED_REASON: &str = "Failed to parse error data";

pub fn classify(err: &kube::Error) -> Failure {
    if let kube::Error::Api(status) = err {
        return match (reason(status).as_str(), status.code) {
            ("Unauthorized", _) | ("", 401) => Failure::Unauthorized,
            ("Forbidden", _) | ("", 403) => Failure::Forbidden,
            _ => Failure::Answered,
        };
    }
    for cause in chain(err) {
        if cause.is::<kube::client::AuthError>() {
            return Failure::Credentials;
        }
        if tls_error(cause).is_some() {
            return Failure::Tls;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return Failure::Refused;
        }
    }
    Failure::Unreachable
}

/// `err` in kubectl's words; `server` (the URL of the kubeconfig) names the host a refused
/// connection was refused by.
pub fn in_words(err: &kube::Error, server: Option<&str>) -> String {
    let failure = classify(err);
    match (failure, err) {
        (Failure::Unauthorized, kube::Error::Api(status)) => {
            let message = message(status);
            format!("You must be logged in to the server ({message})")
        }
        (_, kube::Error::Api(status)) => match reason(status).as_str() {
            "" => format!("Error from server: {}", message(status)),
            reason => format!("Error from server ({reason}): {}", message(status)),
        },
        (Failure::Refused, _) => {
            let host = server
                .and_then(|s| s.parse::<http::Uri>().ok())
                .and_then(|u| u.authority().map(|a| format!(" {a}")))
                .unwrap_or_default();
            format!(
                "The connection to the server{host} was refused - did you specify the right host or port?"
            )
        }
        (Failure::Tls, _) => {
            let tls = chain(err).into_iter().find_map(tls_error);
            let why = tls.map_or_else(|| causes_in_words(err), tls_in_words);
            format!("Unable to connect to the server: {why}")
        }
        (Failure::Credentials, _) => {
            let auth = chain(err)
                .into_iter()
                .find_map(|c| c.downcast_ref::<kube::client::AuthError>());
            let why = auth.map_or_else(|| causes_in_words(err), credentials_in_words);
            format!("Unable to connect to the server: cannot get credentials: {why}")
        }
        (_, kube::Error::Service(_) | kube::Error::HyperError(_)) => {
            format!("Unable to connect to the server: {}", causes_in_words(err))
        }
        // kube's own words (a response that cannot be read, a request that cannot be built).
        _ => causes_in_words(err),
    }
}

/// The causes of `err`, each said once (see [`super::with_causes`]), without kube's names of
/// its layers (`ServiceError:`).
fn causes_in_words(err: &kube::Error) -> String {
    match err {
        kube::Error::Service(inner) => super::with_causes(String::new(), Some(inner.as_ref())),
        kube::Error::HyperError(inner) => super::with_causes(String::new(), Some(inner)),
        other => super::with_causes(other.to_string(), other.source()),
    }
}

/// `err` and every cause under it, stepping into I/O errors: their `source` skips the error
/// they carry (the TLS error inside the I/O error inside hyper's connect error).
fn chain<'a>(err: &'a kube::Error) -> Vec<&'a (dyn StdError + 'static)> {
    let mut causes = Vec::new();
    let mut next: Option<&'a (dyn StdError + 'static)> = Some(err);
    while let Some(cause) = next {
        causes.push(cause);
        next = match cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(carried) => Some(carried),
            None => cause.source(),
        };
    }
    causes
}

fn tls_error<'a>(cause: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    cause.downcast_ref::<rustls::Error>()
}

/// The reason of a Status; for an answer that was not a Status, the one Kubernetes gives its
/// HTTP code (apimachinery's `reasonForCode`).
fn reason(status: &Status) -> String {
    if status.reason != UNPARSED_REASON {
        return status.reason.clone();
    }
    match status.code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "",
    }
    .to_string()
}

/// The server's message. An answer that was not a Status (a proxy's or another server's page)
/// is shown when it is one short line of text; otherwise the HTTP status is said in words.
fn message(status: &Status) -> String {
    let text = status.message.trim();
    let unparsed = status.reason == UNPARSED_REASON;
    let shown = !text.is_empty()
        && !(unparsed && (text.starts_with('<') || text.contains('\n') || text.len() > 200));
    if shown {
        return text.to_string();
    }
    let phrase = http::StatusCode::from_u16(status.code)
        .ok()
        .and_then(|c| c.canonical_reason())
        .map(|p| format!(" {p}"))
        .unwrap_or_default();
    let answered = format!("the server answered {}{phrase}", status.code);
    if text.is_empty() {
        answered
    } else {
        format!(
            "{answered} with a page that is no Kubernetes answer (is this the API server's address?)"
        )
    }
}

fn tls_in_words(err: &rustls::Error) -> String {
    use rustls::CertificateError as Cert;
    match err {
        rustls::Error::InvalidCertificate(cert) => match cert {
            Cert::UnknownIssuer => {
                "the server's certificate is signed by an authority the kubeconfig does not trust"
                    .to_string()
            }
            Cert::NotValidForName => {
                "the server's certificate is not valid for the server's address".to_string()
            }
            Cert::Expired => "the server's certificate has expired".to_string(),
            Cert::NotValidYet => "the server's certificate is not valid yet".to_string(),
            Cert::Revoked => "the server's certificate has been revoked".to_string(),
            Cert::BadSignature => "the server's certificate has a bad signature".to_string(),
            // The other kinds have words of their own, or only a name.
            other => format!("the server's certificate was refused: {}", words_of(other)),
        },
        rustls::Error::AlertReceived(alert) => format!(
            "the server ended the TLS handshake: {} (is the client certificate one it trusts?)",
            decamel(&format!("{alert:?}"))
        ),
        // What rustls reads when the other side answers in plain HTTP.
        rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => {
            "the server does not speak TLS (is its address http://, or the port of another service?)"
                .to_string()
        }
        other => format!("TLS: {}", words_of(other)),
    }
}

fn credentials_in_words(err: &kube::client::AuthError) -> String {
    use kube::client::AuthError as Auth;
    match err {
        Auth::AuthExecStart(io) => format!("cannot run the exec credential plugin: {io}"),
        // Not its `cmd`: kube writes the command as Rust debug text, environment and all.
        Auth::AuthExecRun { out, .. } => {
            let status = match out.status.code() {
                Some(code) => format!("exited with code {code}"),
                None => "was killed".to_string(),
            };
            let stderr = String::from_utf8_lossy(&out.stderr);
            match stderr.trim() {
                "" => format!("the exec credential plugin {status}"),
                said => format!("the exec credential plugin {status}: {said}"),
            }
        }
        Auth::ReadTokenFile(io, path) => {
            format!("cannot read the token file {}: {io}", path.display())
        }
        other => super::with_causes(other.to_string(), other.source()),
    }
}

/// The Display of `value`, except where a library falls back on a variant's name
/// (`InvalidCertificate(UnknownIssuer)` shows "UnknownIssuer"): such names become words.
fn words_of(value: &(impl std::fmt::Display + std::fmt::Debug)) -> String {
    let debug = format!("{value:?}");
    if !debug.is_empty() && debug.chars().all(|c| c.is_ascii_alphanumeric()) {
        return decamel(&debug);
    }
    let shown = value.to_string();
    // A Display that embeds such a name at its end ("peer misbehaved: SelfSignedCert...").
    match shown.rsplit_once(": ") {
        Some((head, tail))
            if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            format!("{head}: {}", decamel(tail))
        }
        _ => shown,
    }
}

/// `UnknownIssuer` as "unknown issuer".
fn decamel(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status::failure(message, reason).with_code(code)))
    }

    #[test]
    fn answers_read_as_kubectl_prints_them() {
        let forbidden = status(
            403,
            "Forbidden",
            "pods is forbidden: User \"u\" cannot list resource \"pods\"",
        );
        assert_eq!(classify(&forbidden), Failure::Forbidden);
        assert_eq!(
            in_words(&forbidden, None),
            "Error from server (Forbidden): pods is forbidden: User \"u\" cannot list resource \"pods\""
        );
        assert_eq!(
            in_words(&status(401, "Unauthorized", "Unauthorized"), None),
            "You must be logged in to the server (Unauthorized)"
        );
        assert_eq!(
            in_words(&status(500, "", "etcd is down"), None),
            "Error from server: etcd is down"
        );
    }

    #[test]
    fn an_answer_that_is_no_status_gets_the_reason_of_its_code() {
        let err = status(404, UNPARSED_REASON, "404 page not found");
        assert_eq!(
            in_words(&err, None),
            "Error from server (NotFound): 404 page not found"
        );
        let page = "<!DOCTYPE HTML>\n<html><body>Not Found</body></html>";
        assert_eq!(
            in_words(&status(404, UNPARSED_REASON, page), None),
            "Error from server (NotFound): the server answered 404 Not Found with a page that is no Kubernetes answer (is this the API server's address?)"
        );
        let err = status(401, UNPARSED_REASON, "");
        assert_eq!(classify(&err), Failure::Unauthorized);
        assert_eq!(
            in_words(&err, None),
            "You must be logged in to the server (the server answered 401 Unauthorized)"
        );
    }

    #[test]
    fn a_refused_connection_names_the_host_and_port() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let err = kube::Error::Service(Box::new(refused));
        assert_eq!(classify(&err), Failure::Refused);
        assert_eq!(
            in_words(&err, Some("https://127.0.0.1:1")),
            "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?"
        );
    }

    #[test]
    fn tls_failures_are_words_not_variant_names() {
        // As kube's client nests it: an I/O error carrying an I/O error carrying rustls's.
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let carried = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        let err = kube::Error::Service(Box::new(std::io::Error::other(carried)));
        assert_eq!(classify(&err), Failure::Tls);
        assert_eq!(
            in_words(&err, None),
            "Unable to connect to the server: the server's certificate is signed by an authority the kubeconfig does not trust"
        );
        let plain = rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        assert_eq!(
            tls_in_words(&plain),
            "the server does not speak TLS (is its address http://, or the port of another service?)"
        );
        let alert = rustls::Error::AlertReceived(rustls::AlertDescription::BadCertificate);
        assert_eq!(
            tls_in_words(&alert),
            "the server ended the TLS handshake: bad certificate (is the client certificate one it trusts?)"
        );
    }

    #[test]
    fn layers_that_only_name_themselves_are_left_out() {
        #[derive(Debug, thiserror::Error)]
        #[error("tcp connect error")]
        struct Connect(#[source] std::io::Error);
        let io = std::io::Error::other("no route to host");
        let err = kube::Error::Service(Box::new(Connect(io)));
        assert_eq!(
            in_words(&err, None),
            "Unable to connect to the server: tcp connect error: no route to host"
        );
    }
}
