// What `kvoctl watch` prints when interrupted: the seq to resume from (`--since`). The SIGINT handler may only do
// async-signal-safe work, so the message is kept ready in a fixed buffer and written with write(2).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The resume hint of a running watch.
enum ResumeHint {
    private static let capacity = 128
    // Written only on the main thread between notifications; read by the SIGINT handler, which only copies bytes out.
    nonisolated(unsafe) private static let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 128)
    nonisolated(unsafe) private static var length = 0

    /// Installs the SIGINT handler, with `seq` as the first resume point.
    static func install(seq: Int64) {
        self.update(seq: seq)
        signal(SIGINT) { _ in
            _ = write(STDERR_FILENO, ResumeHint.buffer, ResumeHint.length)
            _exit(130)
        }
    }

    /// The seq of the last notification seen: a resume with `--since` continues after it.
    static func update(seq: Int64) {
        let text = Array("\nkvoctl: interrupted; resume with --since \(seq)\n".utf8.prefix(self.capacity))
        text.withUnsafeBufferPointer { self.buffer.update(from: $0.baseAddress!, count: $0.count) }
        self.length = text.count
    }
}
