// The one error type of UVLoop and `uvCheck`, the gate every libuv status passes through. A negative libuv status
// becomes a `UVError` carrying the code and the name of the call that returned it; nothing here retries or logs.

internal import CLibUV

/// A libuv call returned a negative status.
public struct UVError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The negative libuv status (a `UV_E*` code, for example `UV_EADDRINUSE`).
    public let code: Int32
    /// The libuv function that returned it, for example `"uv_listen"`.
    public let call: String

    /// Wraps `code` as returned by `call`; `code` must be negative.
    public init(code: Int32, call: String) {
        self.code = code
        self.call = call
    }

    /// "uv_listen: address already in use (EADDRINUSE)".
    public var description: String {
        "\(self.call): \(String(cString: uv_strerror(self.code))) (\(self.name))"
    }

    /// The symbolic libuv name of the code, for example `"ECONNRESET"`.
    public var name: String { String(cString: uv_err_name(self.code)) }

    /// The peer closed its end (`UV_EOF`).
    public var isEOF: Bool { self.code == UV_EOF.rawValue }
    /// Another socket already holds the address (`UV_EADDRINUSE`).
    public var isAddressInUse: Bool { self.code == UV_EADDRINUSE.rawValue }
    /// Nothing listens at the address (`UV_ECONNREFUSED`).
    public var isConnectionRefused: Bool { self.code == UV_ECONNREFUSED.rawValue }
    /// The peer reset the connection (`UV_ECONNRESET`).
    public var isConnectionReset: Bool { self.code == UV_ECONNRESET.rawValue }
    /// A write went to a socket whose peer is gone (`UV_EPIPE`).
    public var isBrokenPipe: Bool { self.code == UV_EPIPE.rawValue }
    /// The request was cancelled because its handle closed (`UV_ECANCELED`).
    public var isCanceled: Bool { self.code == UV_ECANCELED.rawValue }
    /// An argument was invalid, or the handle or loop was already closed (`UV_EINVAL`).
    public var isInvalidArgument: Bool { self.code == UV_EINVAL.rawValue }
}

/// Throws a `UVError` when `status` is negative; every libuv status goes through here (or `uvAssert`).
@inline(__always)
func uvCheck(_ status: Int32, _ call: String) throws(UVError) {
    if status < 0 { throw UVError(code: status, call: call) }
}

/// For calls that libuv documents as unable to fail once their handle is valid (`uv_timer_stop`, `uv_read_stop`):
/// a negative status is a programmer error, as NIO treats EBADF.
@inline(__always)
func uvAssert(_ status: Int32, _ call: StaticString) {
    assert(status >= 0, "\(call) failed with status \(status)")
}

extension UVError {
    /// The error to throw when a handle is used after `close()` or its loop after `shutdown()`.
    static func closed(_ call: String) -> UVError { UVError(code: UV_EINVAL.rawValue, call: call) }
}
