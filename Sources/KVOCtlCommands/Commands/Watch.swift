// `kvoctl watch PATH`: subscribe, then print each change notification's params as one compact JSON line; with query
// flags, a live query, shown on a terminal as its window redrawn (QueryWindow.swift).

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
                It runs until interrupted, or until --count notifications (the initial one included; with a \
                table, drawings) were printed, then exits 0. It waits for notifications forever unless --timeout is \
                given, in which case going that long without a notification exits with status 4. When the \
                connection drops (kvod restarting, or a member failing), watch says so on stderr, reconnects for up \
                to --failover-wait seconds (to the next member, or the same kvod again) and resumes after the last \
                seq it printed: nothing is missed or printed twice when kvod keeps its history (a --data-dir, \
                docs/DURABILITY.md). A query's watch starts again with its whole window instead.

                With a query flag (--where, --var, --order-by, --offset, --limit, --select; as for kvoctl get), \
                PATH is a collection and watch follows the query's window (Protocol/methods.md#queries): \
                notifications are insertions, removals and replacements with indexes relative to the window, each \
                with "count", the number of matches. On a terminal (or with --table) watch shows the window itself, \
                redrawn as a table after each notification (in a pipe, each drawing follows the last, after a blank \
                line); piped (or with --no-table) it prints one JSON line per notification, as for any path. The \
                table subscribes with --initial --new whatever the flags say. After a lost connection a query \
                watch subscribes again and starts with the whole window (kvod cannot resume a query yet).

                EXAMPLES:
                  kvoctl watch person.address.city --initial --old --new
                  kvoctl watch counter --initial --count 1 --context '"mine"'   # then exits
                  kvoctl insert department.employees '{"name":"Ada","salary":120}' '{"name":"Bob","salary":90}'
                  kvoctl watch department.employees --order-by -salary --limit 10 --select name --select salary --initial --count 1
                  kvoctl watch department.employees --where 'salary > 100' --select name --table --count 1
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

        @Option(
            help: ArgumentHelp(
                "json (one params object per line, the default; coloured on a terminal), text (one readable line "
                    + "per notification) or pretty (indented JSON)."))
        var format: OutputFormat?

        @Flag(
            inversion: .prefixedNo,
            help: ArgumentHelp(
                "With a query: show the window as a table, redrawn at each notification (default: on a terminal, "
                    + "unless --format is given)."))
        var table: Bool?

        /// The query flags: with any of them, PATH is a collection and its window is followed.
        @OptionGroup(title: "Query") var query: QueryOptions

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
            if self.query.isQuery && self.since != nil {
                throw ValidationError("--since does not work with a query yet: kvod cannot resume a query subscription.")
            }
            if self.table == true && !self.query.isQuery {
                throw ValidationError("--table shows a query's window: give --where, --order-by, --limit, ...")
            }
        }

        /// Whether to draw the window: --table, or by default a query watch on a terminal without --format.
        var drawsTable: Bool {
            guard self.query.isQuery else { return false }
            return self.table ?? (JSONOutput.isTerminal && self.format == nil)
        }

        /// The subscription options: those flagged, in protocol order, or `new` alone when none are.
        var options: [String] {
            if self.drawsTable { return ["new", "initial"] }
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

        /// Connects, subscribes and prints each notification; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            let client = try self.connection.connect()
            do {
                try self.watch(on: client)
            } catch let error as KVOClientError {
                throw client.report(error)
            }
        }

        /// Subscribes and prints notifications until --count. A lost connection moves to another member (with one
        /// address: waits for the same kvod to come back), which is asked to resume after the last seq seen.
        private func watch(on client: MemberClient) throws {
            // Explicit --timeout bounds the wait between notifications; by default a watch waits forever.
            let notificationTimeout: Duration? = self.connection.timeout.map { .seconds($0) }
            var (subscription, resumeSeq) = try self.subscribe(on: client, since: self.since.map(Int64.init))
            if !self.query.isQuery { ResumeHint.install(seq: resumeSeq) }
            var window = QueryWindow()
            var queued: [KVOClient.Notification] = []  // read ahead by a table, to draw a seq's changes at once
            var printed = 0
            while self.count.map({ printed < $0 }) ?? true {
                let notification: KVOClient.Notification
                do {
                    notification = try queued.isEmpty
                        ? client.client.nextNotification(timeout: .some(notificationTimeout)) : queued.removeFirst()
                } catch {
                    guard error.isLostConnection else { throw error }
                    if self.query.isQuery {
                        // A query's history is kept in memory by the member that served it: start again with the window.
                        queued = []
                        subscription = try self.resubscribe(on: client, since: nil)
                        continue
                    }
                    subscription = try self.resubscribe(on: client, since: resumeSeq)
                    continue
                }
                guard notification.params["subscription"] == .int(subscription) else { continue }
                let seq = notification.params["seq"]?.intValue ?? resumeSeq
                if notification.method == "progress" {
                    resumeSeq = seq
                    ResumeHint.update(seq: seq)
                    continue
                }
                guard notification.method == "change" else { continue }
                // A prior notification comes before its change: a resume from its seq would skip the change.
                if notification.params["prior"] != true && !self.query.isQuery {
                    resumeSeq = seq
                    ResumeHint.update(seq: seq)
                }
                if self.drawsTable {
                    do {
                        try window.apply(notification.params)
                    } catch {
                        throw KVOClientError.protocolViolation("the query's window: \(error)")
                    }
                    // One mutation can send several notifications at one seq (a move is a removal and an
                    // insertion): draw once the last of them is applied. (A lost connection shows at the next read.)
                    if queued.isEmpty { queued = (try? client.client.drainNotifications()) ?? [] }
                    let sameSeq = queued.contains {
                        $0.method == "change" && $0.params["subscription"] == .int(subscription)
                            && $0.params["seq"]?.intValue == seq
                    }
                    if sameSeq { continue }
                    try self.draw(window)
                } else if self.format == .text {
                    try Output.line(Self.text(notification.params))
                } else {
                    try (self.format ?? .json).printJSON(notification.params)
                }
                printed += 1
            }
        }

        /// After a lost connection: connects again (to another member, or the same kvod back from a restart) and
        /// resubscribes after `since`. A connection lost again before the subscription is in place (a kvod that
        /// accepted while it was dying) is one more loss, retried the same way until `--failover-wait` has passed.
        private func resubscribe(on client: MemberClient, since: Int64?) throws(KVOClientError) -> Int64 {
            let deadline = ContinuousClock.now.advanced(by: .seconds(self.connection.resolvedFailoverWait))
            while true {
                let lost = client.address
                try client.moveToAnotherMember()
                if let since {
                    Output.error("connection to \(lost) lost; resuming after seq \(since) on \(client.address)")
                } else {
                    Output.error("connection to \(lost) lost; watching the query again on \(client.address)")
                }
                do {
                    return try self.subscribe(on: client, since: since, restart: since == nil).subscription
                } catch where error.isLostConnection && ContinuousClock.now < deadline {
                    continue
                }
            }
        }

        /// Subscribes on the connected member (after `since` when given: a resume takes no initial notification)
        /// and returns the subscription id and the seq to resume from. A member whose seq has not reached `since`
        /// yet (-32602) is asked again for up to --failover-wait.
        private func subscribe(
            on client: MemberClient, since: Int64?, restart: Bool = false
        ) throws(KVOClientError) -> (subscription: Int64, seq: Int64) {
            var options = self.options
            if since != nil { options.removeAll { $0 == "initial" } }
            if restart && !options.contains("initial") { options.append("initial") }
            var params: JSONObject = ["path": .string(self.path), "options": .array(options.map(JSONValue.string))]
            if self.query.isQuery { params["query"] = self.query.query }
            if let context = self.context { params["context"] = parseJSONOrString(context) }
            if let since { params["since"] = .int(since) }
            if let progress = self.progress { params["progress"] = .int(Int64(progress)) }
            let deadline = ContinuousClock.now.advanced(by: .seconds(self.connection.resolvedFailoverWait))
            while true {
                let result: JSONValue
                do {
                    result = try client.client.call("subscribe", .object(params))
                } catch .server(let error)
                    where since != nil && error.knownCode == .invalidParams && ContinuousClock.now < deadline
                {
                    sleep(for: .milliseconds(100))
                    continue
                }
                guard case .int(let subscription)? = result["subscription"] else {
                    throw .protocolViolation("subscribe returned no subscription id")
                }
                return (subscription, since ?? result["seq"]?.intValue ?? 0)
            }
        }
    }
}

extension KVOCtl.Watch {
    /// Draws the window: on a terminal over the last drawing (cursor home, clear), elsewhere after it and a blank
    /// line.
    fileprivate func draw(_ window: QueryWindow) throws(ExitCode) {
        let lines = window.table(offset: self.query.offset ?? 0, select: self.query.select)
        let text = lines.joined(separator: "\n")
        try Output.line(JSONOutput.isTerminal ? "\u{1B}[H\u{1B}[2J" + text : text + "\n")
    }
}

extension KVOClientError {
    /// True when the connection itself is gone (closed, reset or failed), not when kvod answered or was slow.
    var isLostConnection: Bool {
        switch self {
        case .closed, .connectionLost: true
        default: false
        }
    }
}
