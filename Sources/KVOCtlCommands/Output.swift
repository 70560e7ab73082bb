// Writing to stdout and stderr with write(2): unbuffered, so each line is out (and visible to a pipe) as soon as it is
// written, and without Glibc's `stdout`/`stderr` globals, which Swift 6 does not consider concurrency-safe.

import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SystemCall

/// Line output for kvoctl.
enum Output {
    /// Writes `text` and a newline to stdout. If stdout is gone (the reader of a pipe exited), kvoctl exits 0
    /// quietly: nobody is left to read more.
    static func line(_ text: String) throws(ExitCode) {
        var bytes = Array(text.utf8)
        bytes.append(UInt8(ascii: "\n"))
        guard self.writeAll(bytes, to: STDOUT_FILENO) else { throw KVOCtlExitCode.success }
    }

    /// Writes raw `bytes` and a newline to stdout; see `line(_:)`.
    static func line(bytes: [UInt8]) throws(ExitCode) {
        var bytes = bytes
        bytes.append(UInt8(ascii: "\n"))
        guard self.writeAll(bytes, to: STDOUT_FILENO) else { throw KVOCtlExitCode.success }
    }

    /// Writes `kvoctl: ` + `text` and a newline to stderr.
    static func error(_ text: String) {
        _ = self.writeAll(Array("kvoctl: \(text)\n".utf8), to: STDERR_FILENO)
    }

    /// Writes every byte (SystemCall.writeAll); false when the descriptor refuses.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        SystemCall.writeAll(descriptor, bytes) == 0
    }
}
