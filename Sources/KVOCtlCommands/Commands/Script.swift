// `kvoctl -`: requests from stdin, one per line, pipelined over one connection; every line kvod sends is echoed to
// stdout as it arrives. At end of input it waits for the responses still owed, then exits. Line syntax: ScriptLine.

import ArgumentParser
import KVOClient
import WireProtocol
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension KVOCtl {
    /// Runs requests read from stdin.
    struct Script: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "-",
            abstract: "Read requests from stdin, one per line, and print every line kvod sends.",
            discussion: """
                A line starting with { or [ is sent verbatim as a JSON-RPC message (or batch). Any other line is a \
                command, sent as a request with the next id (1, 2, ...):
                  get PATH
                  set PATH VALUE            (VALUE: rest of the line, JSON or else a string)
                  subscribe PATH [new] [old] [initial] [prior] [context=JSON]
                  unsubscribe ID
                  ping
                  hello [CLIENT]
                  call METHOD [PARAMS-JSON]
                Blank lines and lines starting with # are skipped. Requests are sent as soon as they are read; \
                responses and notifications are printed, one JSON message per line, as they arrive. At the end of \
                the input kvoctl waits (up to --timeout seconds for each) for the responses still owed, then exits: \
                0 if no response was an error, 2 if one was, 64 if a line was not understood (it is reported on \
                stderr and skipped; the other lines still run). Notifications that arrive after the last response \
                are not waited for. Given several addresses, it connects to the first that answers and sends \
                everything there (no leader following: a 1012 answer is printed like any other).

                EXAMPLE:
                  printf '%s\\n' 'set person.firstName Ada' 'subscribe person.firstName new' \\
                    '{"jsonrpc":"2.0","id":"x","method":"get","params":{"path":"person"}}' \\
                    | kvoctl -
                """)

        /// Where kvod is and how long to wait for it.
        @OptionGroup var connection: ConnectionOptions

        /// Connects, sends the request(s) and prints the outcome; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            let connection = try self.connection.connectLines()
            var session = ScriptSession(connection: connection, timeout: .seconds(self.connection.resolvedTimeout))
            do {
                try session.run()
            } catch let error as KVOClientError {
                throw self.connection.report(
                    error, at: MemberAddress(host: connection.host, port: connection.port))
            }
            if session.hasInvalidLine { throw KVOCtlExitCode.usage }
            if session.hasErrorResponse { throw KVOCtlExitCode.serverError }
        }
    }
}

/// The state of one `kvoctl -` run: stdin in, server lines out, responses still owed.
private struct ScriptSession {
    let connection: LineConnection
    /// How long to wait for each owed response once stdin has ended.
    let timeout: Duration

    /// Response lines the server still owes (a batch answer counts as one line).
    private(set) var owedResponses = 0
    /// True once a response (or a batch element) was a JSON-RPC error.
    private(set) var hasErrorResponse = false
    /// True once an input line was not understood.
    private(set) var hasInvalidLine = false

    private var nextID: Int64 = 1
    private var lineNumber = 0
    private var input: [UInt8] = []
    private var isInputOpen = true

    init(connection: LineConnection, timeout: Duration) {
        self.connection = connection
        self.timeout = timeout
    }

    /// Pumps stdin to the server and the server to stdout until stdin has ended and no response is owed.
    mutating func run() throws {
        var deadline: ContinuousClock.Instant?
        while true {
            while let line = try self.connection.readLineIfAvailable() {
                try self.received(line)
                if !self.isInputOpen { deadline = .now.advanced(by: self.timeout) }
            }
            if !self.isInputOpen && self.owedResponses == 0 { return }

            var descriptors = [pollfd(fd: self.connection.fileDescriptor, events: Int16(POLLIN), revents: 0)]
            if self.isInputOpen { descriptors.append(pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)) }
            let status = poll(&descriptors, nfds_t(descriptors.count), Self.milliseconds(until: deadline))
            if status < 0 {
                if errno == EINTR { continue }
                throw KVOClientError.connectionLost("poll: \(String(cString: strerror(errno)))")
            }
            if status == 0 {
                let owed = self.owedResponses == 1 ? "1 response" : "\(self.owedResponses) responses"
                throw KVOClientError.timeout("after end of input, waiting for \(owed)")
            }
            if self.isInputOpen && descriptors[1].revents != 0 {
                try self.readInput()
                if !self.isInputOpen { deadline = .now.advanced(by: self.timeout) }
            }
        }
    }

    /// Reads one chunk of stdin and sends every complete line; at end of input, also a final unterminated line.
    private mutating func readInput() throws {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress!, $0.count) }
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { return }
            Output.error("cannot read stdin: \(String(cString: strerror(errno)))")
            throw KVOCtlExitCode.failure
        }
        if count == 0 {
            self.isInputOpen = false
            if !self.input.isEmpty { try self.process(String(decoding: self.input, as: UTF8.self)) }
            self.input.removeAll()
            return
        }
        self.input.append(contentsOf: chunk[..<count])
        while let newline = self.input.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: self.input[..<newline], as: UTF8.self)
            self.input.removeSubrange(...newline)
            try self.process(line)
        }
    }

    /// Sends what one input line means and counts the response it will get.
    private mutating func process(_ line: String) throws {
        self.lineNumber += 1
        switch ScriptLine(parsing: line) {
        case .skip:
            return
        case .invalid(let reason):
            Output.error("line \(self.lineNumber): \(reason)")
            self.hasInvalidLine = true
        case .raw(let text):
            if Self.expectsResponse(text) { self.owedResponses += 1 }
            try self.connection.sendLine(text)
        case .request(let method, let params):
            var bytes: [UInt8] = []
            RPCEncoder.appendRequest(id: .int(self.nextID), method: method, params: params, to: &bytes)
            bytes.append(UInt8(ascii: "\n"))
            self.nextID += 1
            self.owedResponses += 1
            try self.connection.send(bytes)
        }
    }

    /// Echoes one server line and settles the response it answers, if it is one.
    private mutating func received(_ line: [UInt8]) throws {
        try Output.line(bytes: line)
        let message: RPCServerMessage
        do {
            message = try RPCServerMessage.decode(line)
        } catch {
            throw KVOClientError.protocolViolation("\(error)")
        }
        switch message {
        case .notification:
            return
        case .response:
            break
        case .error:
            self.hasErrorResponse = true
        case .batch(let elements):
            let isError = { (element: RPCServerMessage) in if case .error = element { true } else { false } }
            if elements.contains(where: isError) { self.hasErrorResponse = true }
        }
        self.owedResponses = max(0, self.owedResponses - 1)
    }

    /// Whether kvod answers `text` at all, by JSON-RPC's rules: everything but a notification (a valid request
    /// without an id), or a batch made only of notifications, gets exactly one response line.
    private static func expectsResponse(_ text: String) -> Bool {
        switch RPCMessage.decode(Array(text.utf8)) {
        case .parseError, .emptyBatch:
            return true
        case .single(let parsed):
            return Self.needsAnswer(parsed)
        case .batch(let elements):
            return elements.contains(where: Self.needsAnswer)
        }
    }

    private static func needsAnswer(_ parsed: RPCParsed) -> Bool {
        switch parsed {
        case .request(let request): !request.isNotification
        case .invalid: true
        }
    }

    /// The poll() timeout for `deadline` (nil: forever).
    private static func milliseconds(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return -1 }
        let remaining = ContinuousClock.now.duration(to: deadline)
        if remaining <= .zero { return 0 }
        let (seconds, attoseconds) = remaining.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
