// Thin helpers over the POSIX socket calls LineConnection makes: platform differences (Glibc vs Darwin constants),
// errno text, deadlines turned into poll() timeouts, and connecting with a timeout. No buffering lives here.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SystemCall

/// The text of an errno value (`strerror`).
package func errnoDescription(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// Closes `descriptor`, ignoring the result (there is nothing useful to do when close fails).
package func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}

/// One send() call that never raises SIGPIPE (MSG_NOSIGNAL on Linux, SO_NOSIGPIPE set at socket creation elsewhere).
package func sendWithoutSignal(_ descriptor: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    send(descriptor, pointer, count, Int32(MSG_NOSIGNAL))
    #else
    send(descriptor, pointer, count, 0)
    #endif
}

/// The poll() timeout in milliseconds that waits until `deadline` (rounded up), or -1 (forever) for no deadline.
package func pollTimeout(until deadline: ContinuousClock.Instant?) -> Int32 {
    guard let deadline else { return -1 }
    let remaining = ContinuousClock.now.duration(to: deadline)
    if remaining <= .zero { return 0 }
    let (seconds, attoseconds) = remaining.components
    let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int32(clamping: milliseconds)
}

/// The instant `timeout` from now, or nil (no deadline) when `timeout` is nil.
package func makeDeadline(after timeout: Duration?) -> ContinuousClock.Instant? {
    timeout.map { ContinuousClock.now.advanced(by: $0) }
}

/// Waits until `descriptor` has one of `events` (POLLIN, POLLOUT), an error or a hang-up, or until `deadline`.
/// Returns false on timeout. EINTR restarts the wait with the remaining time.
package func waitFor(_ events: Int32, on descriptor: Int32, until deadline: ContinuousClock.Instant?) throws(KVOClientError)
    -> Bool
{
    var entry = pollfd(fd: descriptor, events: Int16(events), revents: 0)
    let status = SystemCall.retrying { poll(&entry, 1, pollTimeout(until: deadline)) }
    if status > 0 { return true }
    if status == 0 { return false }
    throw .connectionLost("poll: \(errnoDescription(errno))")
}

/// Sets O_NONBLOCK on `descriptor`; returns errno on failure.
private func makeNonBlocking(_ descriptor: Int32) -> Int32? {
    let flags = fcntl(descriptor, F_GETFL)
    if flags < 0 || fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) < 0 { return errno }
    return nil
}

/// A TCP socket for `family`, close-on-exec (so test helpers that spawn processes do not leak it), not raising
/// SIGPIPE where the platform supports that per socket. Returns -1 with errno set on failure.
private func makeStreamSocket(family: Int32) -> Int32 {
    #if canImport(Glibc)
    return socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    #else
    let descriptor = socket(family, SOCK_STREAM, 0)
    if descriptor >= 0 {
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        var on: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
    }
    return descriptor
    #endif
}

/// Resolves `host` (a name, an IPv4 or an IPv6 literal) and connects to the first address that accepts within the
/// overall `timeout`. Returns a connected, non-blocking socket with TCP_NODELAY set.
package func connectTCP(host: String, port: Int, timeout: Duration?) throws(KVOClientError) -> Int32 {
    func failure(_ reason: String) -> KVOClientError {
        .connectionFailed(host: host, port: port, reason: reason)
    }
    guard (1...65535).contains(port) else { throw failure("port must be between 1 and 65535") }
    let deadline = makeDeadline(after: timeout)

    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    #if canImport(Glibc)
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #else
    hints.ai_socktype = SOCK_STREAM
    #endif
    hints.ai_flags = AI_NUMERICSERV
    var list: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, String(port), &hints, &list)
    guard status == 0, let first = list else {
        throw failure(status == 0 ? "no addresses" : String(cString: gai_strerror(status)))
    }
    defer { freeaddrinfo(list) }

    var lastReason = "no usable address"
    var next: UnsafeMutablePointer<addrinfo>? = first
    while let info = next {
        next = info.pointee.ai_next
        let descriptor = makeStreamSocket(family: info.pointee.ai_family)
        guard descriptor >= 0 else {
            lastReason = "socket: \(errnoDescription(errno))"
            continue
        }
        if let code = makeNonBlocking(descriptor) {
            lastReason = "fcntl: \(errnoDescription(code))"
            closeDescriptor(descriptor)
            continue
        }
        if connect(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
            let code = errno
            guard code == EINPROGRESS || code == EINTR else {
                lastReason = errnoDescription(code)
                closeDescriptor(descriptor)
                continue
            }
            let ready: Bool
            do {
                ready = try waitFor(Int32(POLLOUT), on: descriptor, until: deadline)
            } catch {
                closeDescriptor(descriptor)
                throw failure("\(error)")
            }
            guard ready else {
                closeDescriptor(descriptor)
                throw failure("connect timed out")
            }
            var socketError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &socketError, &length) != 0 { socketError = errno }
            guard socketError == 0 else {
                lastReason = errnoDescription(socketError)
                closeDescriptor(descriptor)
                continue
            }
        }
        var on: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        return descriptor
    }
    throw failure(lastReason)
}
