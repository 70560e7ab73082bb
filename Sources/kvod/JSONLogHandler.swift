// `--log-format json`: a swift-log handler that writes one JSON object per line to stderr, for log shippers:
// {"time":"2025-01-02T03:04:05.678Z","level":"info","label":"kvod","message":"...","metadata":{"connection.id":"7"}}.
#if canImport(Glibc)
import Glibc
#endif
import Logging
import WireProtocol

/// Writes each log event as one line of JSON on standard error.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = self.metadata
        if let provided = self.metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let metadata = event.metadata { merged.merge(metadata) { $1 } }
        var line = JSONObject()
        line["time"] = .string(Self.timestamp())
        line["level"] = .string(event.level.rawValue)
        line["label"] = .string(self.label)
        line["message"] = .string(event.message.description)
        if let error = event.error { line["error"] = .string("\(error)") }
        if !merged.isEmpty { line["metadata"] = Self.json(merged) }
        var bytes = JSONWriter.encode(.object(line))
        bytes.append(UInt8(ascii: "\n"))
        POSIX.writeAll(bytes, to: STDERR_FILENO)  // one write(2) per line: lines of different loggers never interleave
    }

    /// Metadata as a JSON object, keys sorted so lines are stable.
    private static func json(_ metadata: Logger.Metadata) -> JSONValue {
        var object = JSONObject()
        for key in metadata.keys.sorted() { object[key] = self.json(metadata[key]!) }  // key from metadata.keys
        return .object(object)
    }

    private static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .dictionary(let metadata): self.json(metadata)
        case .array(let values): .array(values.map { self.json($0) })
        }
    }

    /// The current time in UTC, ISO 8601 with milliseconds.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ number: Int, _ width: Int) -> String {
            let digits = String(number)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let date = "\(padded(Int(parts.tm_year) + 1900, 4))-\(padded(Int(parts.tm_mon) + 1, 2))-\(padded(Int(parts.tm_mday), 2))"
        let time = "\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2))"
        return "\(date)T\(time).\(padded(Int(now.tv_nsec / 1_000_000), 3))Z"
    }
}

/// The one LoggingSystem.bootstrap of kvod.
enum LogSetup {
    /// Sends every logger to stderr at `level`, as text or JSON lines.
    static func bootstrap(level: Logger.Level, format: LogFormat) {
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
