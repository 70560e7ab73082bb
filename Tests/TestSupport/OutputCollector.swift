// Drains one pipe on a dedicated thread into a locked buffer, so a child process never blocks on a full pipe and
// tests can wait, with a bound, for the text they expect. Used by RunningCommand and KVODProcess.

public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes read so far from one pipe, filled by a background thread until end of stream.
public final class OutputCollector: @unchecked Sendable {
    // @unchecked: every mutable member is guarded by `condition`.
    private let condition = NSCondition()
    private var bytes: [UInt8] = []
    private var isFinished = false
    private let handle: FileHandle

    /// Starts draining `handle` (the read end of a pipe) on a new thread.
    public init(_ handle: FileHandle) {
        self.handle = handle
        let thread = Thread { [self] in self.drain() }
        thread.name = "OutputCollector"
        thread.start()
    }

    /// Everything read so far, decoded as UTF-8.
    public var text: String {
        self.condition.withLock { String(decoding: self.bytes, as: UTF8.self) }
    }

    /// True once the writer side closed (every writer exited or closed it).
    public var hasFinished: Bool {
        self.condition.withLock { self.isFinished }
    }

    /// Waits until `predicate(text)` holds or `timeout` passes; returns whether it held. Also returns (false) early
    /// when the stream has ended and the predicate still fails.
    @discardableResult
    public func wait(timeout: Duration, until predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(Self.seconds(timeout))
        self.condition.lock()
        defer { self.condition.unlock() }
        while true {
            if predicate(String(decoding: self.bytes, as: UTF8.self)) { return true }
            if self.isFinished { return false }
            if !self.condition.wait(until: deadline) {
                return predicate(String(decoding: self.bytes, as: UTF8.self))
            }
        }
    }

    /// Waits until the stream ends or `timeout` passes; returns whether it ended.
    @discardableResult
    public func waitForEnd(timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Self.seconds(timeout))
        self.condition.lock()
        defer { self.condition.unlock() }
        while !self.isFinished {
            if !self.condition.wait(until: deadline) { return self.isFinished }
        }
        return true
    }

    private func drain() {
        let descriptor = self.handle.fileDescriptor
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            self.condition.withLock {
                if count > 0 {
                    self.bytes.append(contentsOf: chunk[..<count])
                } else {
                    self.isFinished = true
                }
                self.condition.broadcast()
            }
            if count <= 0 { return }
        }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
