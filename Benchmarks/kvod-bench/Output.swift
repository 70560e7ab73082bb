// The one place that touches the C standard streams: flushing (Glibc's `stdout` global is not concurrency-safe in
// Swift 6, so everything goes through `fflush(nil)`) and writing diagnostics to standard error.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Flushes every C output stream.
func fflushAll() {
    fflush(nil)
}

/// Writes `text` and a newline to standard error, unbuffered.
func printError(_ text: String) {
    var line = Array((text + "\n").utf8)
    line.withUnsafeMutableBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)  // non-empty
            if written <= 0 { return }
            offset += written
        }
    }
}
