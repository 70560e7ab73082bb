// What went wrong in TLS, as one sentence for people: a file that cannot be used, a handshake the peer broke, a
// certificate that did not verify. OpenSSL's error queue is read (and emptied) where the error is made.
internal import COpenSSL

/// A TLS failure with its reason for people.
public struct TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What failed and why, e.g. "certificate verify failed: certificate has expired".
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { self.message }

    /// `context`, followed by the reasons OpenSSL queued on this thread (its queue is emptied).
    static func openSSL(_ context: String) -> TLSError {
        let reasons = drainErrorQueue()
        return TLSError(reasons.isEmpty ? context : "\(context): \(reasons.joined(separator: "; "))")
    }
}

/// The reasons on OpenSSL's per-thread error queue, oldest first; the queue is left empty.
func drainErrorQueue() -> [String] {
    var reasons: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        // The reason alone ("certificate verify failed"), not the library and function prefix.
        if let reason = ERR_reason_error_string(code) {
            let text = String(cString: reason)
            if !reasons.contains(text) { reasons.append(text) }
        } else {
            reasons.append("error \(code)")
        }
    }
    return reasons
}
