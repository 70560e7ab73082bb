// `kvoctl watch PATH`: subscribe, then print each change notification's params as one compact JSON line.

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Prints change notifications for a key path.
    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Subscribe to a key path and print one JSON line per change notification.",
            discussion: """
                Each line is the notification's params object, e.g. \
                {"subscription":7,"path":"a.b","kind":"setting","new":2,"old":1,"seq":42}, written and flushed as \
                it arrives. Without any of --new, --old, --initial, --prior, watch behaves as if --new was given. \
                It runs until interrupted, or until --count notifications (the initial one included) were printed, \
                then exits 0. It waits for notifications forever unless --timeout is given, in which case going \
                that long without a notification exits with status 4.

                EXAMPLES:
                  kvoctl watch person.address.city --initial --old --new
                  kvoctl watch counter --count 1 --context '"mine"'
                """)

        /// Where kvod is and how long to wait for it.
        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The key path to observe, e.g. person.address.city.")
        var path: String

        @Flag(help: "Include the new value in each notification (the default when no option flag is given).")
        var new = false

        @Flag(help: "Include the old value in each notification.")
        var old = false

        @Flag(help: "Send one notification with the current value right away.")
        var initial = false

        @Flag(help: "Also send a notification before each change (marked \"prior\":true).")
        var prior = false

        @Option(
            help: ArgumentHelp("A value echoed back in every notification: JSON, or else a string.", valueName: "json"))
        var context: String?

        @Option(help: "Exit 0 after printing this many notifications.")
        var count: Int?

        @Option(help: "json (one params object per line, the default) or text (one readable line per notification).")
        var format: OutputFormat = .json

        @Option(help: ArgumentHelp(
            "Resume: first print every notification after this seq (from kvod's history), then continue live.",
            valueName: "seq"))
        var since: Int?

        @Option(help: ArgumentHelp("Ask for a progress notice after this many quiet seconds (keeps the resume seq fresh).", valueName: "seconds"))
        var progress: Int?

        /// Rejects invalid values with a ValidationError (exit status 64).
        func validate() throws {
            if let count = self.count, count < 1 {
                throw ValidationError("--count must be at least 1.")
            }
            if let since = self.since, since < 0 { throw ValidationError("--since must be a seq (0 or more).") }
            if self.since != nil && self.initial { throw ValidationError("--since and --initial exclude each other.") }
        }

        /// The subscription options: those flagged, in protocol order, or `new` alone when none are.
        var options: [String] {
            let flagged = [("new", self.new), ("old", self.old), ("initial", self.initial), ("prior", self.prior)]
                .filter(\.1).map(\.0)
            return flagged.isEmpty ? ["new"] : flagged
        }

        /// One readable line: `seq 7 list insertion at [1, 4]: new ["x","y"]`, `seq 8 name will change (old "a")`.
        static func text(_ params: JSONValue) -> String {
            let seq = params["seq"]?.intValue.map(String.init) ?? "?"
            let path = params["path"]?.stringValue ?? "?"
            let kind = params["kind"]?.stringValue ?? "setting"
            var line = "seq \(seq) \(path)"
            if params["initial"] == true {
                line += " initially"
            } else if params["prior"] == true {
                line += " will change (\(kind))"
            } else {
                line += " \(kind)"
            }
            if let indexes = params["indexes"]?.arrayValue {
                line += " at [" + indexes.map { $0.intValue.map(String.init) ?? "?" }.joined(separator: ", ") + "]"
            }
            var parts: [String] = []
            if let old = params["old"] { parts.append("old \(JSONWriter.encodeString(old))") }
            if let new = params["new"] { parts.append("new \(JSONWriter.encodeString(new))") }
            if kind == "setting", params["prior"] != true, let old = params["old"], let new = params["new"] {
                parts = ["\(JSONWriter.encodeString(old)) -> \(JSONWriter.encodeString(new))"]
            }
            if !parts.isEmpty { line += ": " + parts.joined(separator: ", ") }
            if let context = params["context"] { line += "  (context \(JSONWriter.encodeString(context)))" }
            return line
        }

        /// Connects, sends the request(s) and prints the outcome; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            let client = try self.connection.connect()
            // Explicit --timeout bounds the wait between notifications; by default a watch waits forever.
            let notificationTimeout: Duration? = self.connection.timeout.map { .seconds($0) }
            do {
                var params: JSONObject = [
                    "path": .string(self.path), "options": .array(self.options.map(JSONValue.string)),
                ]
                if let context = self.context { params["context"] = parseJSONOrString(context) }
                if let since = self.since { params["since"] = .int(Int64(since)) }
                if let progress = self.progress { params["progress"] = .int(Int64(progress)) }
                let result = try client.call("subscribe", .object(params))
                guard case .int(let subscription)? = result["subscription"] else {
                    throw KVOClientError.protocolViolation("subscribe returned no subscription id")
                }
                ResumeHint.install(seq: result["seq"]?.intValue ?? 0)
                var printed = 0
                while self.count.map({ printed < $0 }) ?? true {
                    let notification = try client.nextNotification(timeout: .some(notificationTimeout))
                    guard notification.params["subscription"] == .int(subscription) else { continue }
                    if notification.method == "progress" {
                        ResumeHint.update(seq: notification.params["seq"]?.intValue ?? 0)
                        continue
                    }
                    guard notification.method == "change" else { continue }
                    ResumeHint.update(seq: notification.params["seq"]?.intValue ?? 0)
                    try Output.line(
                        self.format == .json
                            ? JSONWriter.encodeString(notification.params) : Self.text(notification.params))
                    printed += 1
                }
            } catch let error as KVOClientError {
                throw self.connection.report(error)
            }
        }
    }
}
