// kvod's options, declared once each in one table: the name (also the config file's key and, as KVOD_NAME, the
// environment variable), the kind of value, the help text, and for a setting where its value goes in the
// Configuration, how it is parsed and which default applies (read from `Configuration.defaults`, so `--help` states
// the default the code uses). The command line is parsed against this table (DaemonArguments.swift), `--help` is
// rendered from it (Help.swift), and `Configuration.resolve` runs each setting's resolution in table order.
//
// To add a setting: a property with its default in Configuration, one declaration below (`.setting` for a value with
// a default, `.optional` for one unset by default, `.path` for a file or directory, `.toggle` for a Boolean), and a
// row in docs/CONFIGURATION.md (ConfigurationTests checks that `--help` and the document list the same settings):
//     .setting(
//         "sync-replicas", \.syncReplicas, valueName: "count",
//         "The followers that must have a mutation in their journal before the leader answers it.",
//         parse: SettingParser.integer(in: 0...16)),
// A check across settings ("cluster-etcd needs data-dir") goes in `Configuration.resolve`, after the table.
import KVOServer
import Logging
import Persistence
import TLS

/// One option of kvod.
struct DaemonOption {
    /// What follows the option on the command line.
    enum Kind {
        /// A value: `--port 7070` or `--port=7070`; the associated text names it in `--help` (`<port>`).
        case value(String)
        /// A Boolean setting with an inverse: `--empty` gives it "true", `--no-empty` "false".
        case toggle
        /// A flag of the command only (`--print-config`, `--help`): no value, no environment variable, no file key.
        case flag
    }

    /// The long name, without the dashes.
    let name: String
    /// A one-letter name (`h` for `-h`), if the option has one.
    var shortName: Character?
    let kind: Kind
    /// The help text as `--help` shows it; a setting's names its environment variable and its default.
    let help: String
    /// Reads the setting through the layers (flag, environment, file, default) into the configuration; nil for the
    /// options of the command itself (`--config`, `--print-config`, `--dump-snapshot`, `--version`, `--help`).
    let resolve: ((inout Configuration, inout SettingLayers) throws(ConfigurationError) -> Void)?

    /// The option as `--help` lists it: `--port <port>`, `--empty/--no-empty`, `-h, --help`.
    var label: String {
        let long: String
        switch self.kind {
        case .value(let valueName): long = "--\(self.name) <\(valueName)>"
        case .toggle: long = "--\(self.name)/--no-\(self.name)"
        case .flag: long = "--\(self.name)"
        }
        return self.shortName.map { "-\($0), \(long)" } ?? long
    }
}

extension DaemonOption {
    /// A setting with a default: `keyPath`'s value in `Configuration.defaults`, shown in the help with `show`
    /// unless `shownDefault` describes it.
    static func setting<Value>(
        _ name: String, _ keyPath: WritableKeyPath<Configuration, Value>, valueName: String, _ abstract: String,
        default shownDefault: String? = nil, show: @escaping (Value) -> String = { "\($0)" },
        parse: @escaping (RawSetting) throws(SettingError) -> Value
    ) -> DaemonOption {
        let defaultValue = Configuration.defaults[keyPath: keyPath]
        return DaemonOption(
            name: name, kind: .value(valueName),
            help: Self.settingHelp(abstract, name, default: shownDefault ?? show(defaultValue))
        ) { configuration, layers throws(ConfigurationError) in
            configuration[keyPath: keyPath] = try layers.value(name, default: defaultValue, show: show, parse: parse)
        }
    }

    /// A setting that is unset by default (a port to open, a name); `shownDefault` says what unset means.
    static func optional<Value>(
        _ name: String, _ keyPath: WritableKeyPath<Configuration, Value?>, valueName: String, _ abstract: String,
        default shownDefault: String, parse: @escaping (RawSetting) throws(SettingError) -> Value
    ) -> DaemonOption {
        DaemonOption(
            name: name, kind: .value(valueName), help: Self.settingHelp(abstract, name, default: shownDefault)
        ) { configuration, layers throws(ConfigurationError) in
            configuration[keyPath: keyPath] = try layers.optionalValue(name, parse: parse)
        }
    }

    /// An optional path; one relative to the config file is taken relative to the file's directory.
    static func path(
        _ name: String, _ keyPath: WritableKeyPath<Configuration, String?>, valueName: String, _ abstract: String,
        default shownDefault: String
    ) -> DaemonOption {
        DaemonOption(
            name: name, kind: .value(valueName), help: Self.settingHelp(abstract, name, default: shownDefault)
        ) { configuration, layers throws(ConfigurationError) in
            configuration[keyPath: keyPath] = try layers.path(name)
        }
    }

    /// A Boolean setting, `--name` / `--no-name` on the command line, true or false in the environment and the file.
    static func toggle(
        _ name: String, _ keyPath: WritableKeyPath<Configuration, Bool>, _ abstract: String
    ) -> DaemonOption {
        let defaultValue = Configuration.defaults[keyPath: keyPath]
        return DaemonOption(
            name: name, kind: .toggle, help: Self.settingHelp(abstract, name, default: "\(defaultValue)")
        ) { configuration, layers throws(ConfigurationError) in
            configuration[keyPath: keyPath] = try layers.value(name, default: defaultValue, parse: SettingParser.bool)
        }
    }

    /// An option of the command line only, handled by the Daemon itself.
    static func command(_ name: String, _ kind: Kind, _ help: String, shortName: Character? = nil) -> DaemonOption {
        DaemonOption(name: name, shortName: shortName, kind: kind, help: help, resolve: nil)
    }

    /// A setting's help: what it does, then its environment variable and default.
    private static func settingHelp(_ abstract: String, _ name: String, default shownDefault: String) -> String {
        "\(abstract) Env \(SettingLayers.environmentName(name)); default \(shownDefault)."
    }
}

/// The table.
enum DaemonOptions {
    /// Every option, in the order `--help` lists them and the settings are resolved.
    static var all: [DaemonOption] {
        let port = SettingParser.integer(in: 0...65535)
        let count = SettingParser.integer(in: 1...100_000_000)
        let bytes = SettingParser.integer(in: 0...Int(Int32.max))
        let seconds = SettingParser.integer(in: 0...86_400)
        return [
            .command(
                "config", .value("file"),
                "A JSON config file whose keys are these long option names, e.g. {\"port\": 7070}. Env KVOD_CONFIG."),
            .command(
                "print-config", .flag,
                "Print the effective configuration (each setting, its value and source) as JSON and exit."),
            .command(
                "dump-snapshot", .value("dir"),
                "Print the snapshot in this data directory as JSON (for people and tools) and exit; works beside a "
                    + "running kvod."),

            // MARK: Serving

            .setting("host", \.host, valueName: "address", "The address to listen on.", parse: SettingParser.string),
            .setting("port", \.port, valueName: "port", "The TCP port to listen on; 0 picks a free one.", parse: port),
            .path(
                "model", \.model, valueName: "file", "A model file declaring the classes to serve (docs/MODEL.md).",
                default: "the embedded seed model"),
            .toggle("empty", \.empty, "Serve an empty open root (any key, any value) instead of the default model."),
            .setting(
                "busy-poll", \.busyPollMicroseconds, valueName: "microseconds",
                "After each read, poll without blocking for this long before the loop sleeps again: a CPU kept busy "
                    + "for a faster wake-up at one request in flight (0: off; docs/PERFORMANCE.md#busy-polling).",
                parse: SettingParser.integer(in: 0...1_000_000)),

            // MARK: Durability and resuming

            .path(
                "data-dir", \.dataDirectory, valueName: "dir",
                "Keep the graph in this directory (journal and snapshots) and reload it at start.",
                default: "none (in memory)"),
            .setting(
                "fsync", \.fsync, valueName: "policy",
                "When the journal is fsynced: always (before responses are sent), everysec, no.", show: \.rawValue
            ) { raw throws(SettingError) in
                FsyncPolicy(rawValue: try SettingParser.choice(["always", "everysec", "no"])(raw)) ?? .everysec
            },
            .setting(
                "snapshot-every", \.snapshotEvery, valueName: "records",
                "Snapshot the graph after this many journal records (0: only at shutdown).",
                parse: SettingParser.integer(in: 0...Int.max)),
            .setting(
                "snapshot-cpus", \.snapshotCPUs, valueName: "list",
                "The CPUs a snapshot's process may run on, e.g. 1,3 or 2-3 (as Redis's bgsave_cpulist).",
                default: "those kvod runs on", show: Configuration.showCPUList, parse: Configuration.parseCPUList),
            .setting(
                "history", \.history, valueName: "count",
                "Changes kept so that a subscription can resume with 'since' (0: no resuming); with --data-dir "
                    + "also on disk (history.log), across restarts.",
                parse: SettingParser.integer(in: 0...10_000_000)),

            // MARK: Access control and limits

            .path(
                "token-file", \.tokenFile, valueName: "file",
                "Tokens clients must present in hello, one 'TOKEN read-write|read-only' per line; KVOD_TOKEN adds one "
                    + "read-write token.", default: "none (no access control)"),
            .setting(
                "max-connections", \.limits.maxConnections, valueName: "count",
                "Client connections open at once; one more is sent closing (too_many_connections).", parse: count),
            .setting(
                "max-subscriptions", \.limits.maxSubscriptionsPerConnection, valueName: "count",
                "Subscriptions one connection may hold; one more is error 1009.", parse: count),
            .setting(
                "max-context-bytes", \.limits.maxContextBytes, valueName: "bytes",
                "The largest context a subscription may carry, as compact JSON; larger is error 1009 (0: no limit).",
                parse: bytes),
            .setting(
                "max-line-bytes", \.limits.maxLineBytes, valueName: "bytes",
                "The longest request line accepted (1024 or more); a longer one closes the connection.",
                parse: SettingParser.integer(in: 1024...(1 << 30))),
            .setting(
                "max-batch-requests", \.limits.maxBatchRequests, valueName: "count",
                "Requests in one batch.", parse: count),
            .setting(
                "max-transaction-ops", \.limits.maxTransactionOps, valueName: "count",
                "Ops in one transaction or onDisconnect (a transaction runs whole in one loop turn).", parse: count),
            .setting(
                "max-json-depth", \.limits.maxJSONDepth, valueName: "levels",
                "The deepest nesting of arrays and objects in a request (2 to 64).",
                parse: SettingParser.integer(in: 2...64)),
            .setting(
                "max-auth-failures", \.limits.maxAuthenticationFailures, valueName: "count",
                "Wrong tokens a connection may send before it is closed (0: no limit).",
                parse: SettingParser.integer(in: 0...1_000_000)),
            .setting(
                "auth-timeout", \.limits.authTimeoutSeconds, valueName: "seconds",
                "With tokens: seconds a connection may stay without an accepted hello before it is closed (0: no "
                    + "limit).", parse: seconds),
            .setting(
                "output-hard-limit-bytes", \.limits.outputHardLimitBytes, valueName: "bytes",
                "Output queued for a client beyond which it is closed at once (slow_consumer; 0: no limit).",
                parse: bytes),
            .setting(
                "output-soft-limit-bytes", \.limits.outputSoftLimitBytes, valueName: "bytes",
                "Output queued for a client beyond which, for --output-soft-limit-seconds, it is closed (0: no limit).",
                parse: bytes),
            .setting(
                "output-soft-limit-seconds", \.limits.outputSoftLimitSeconds, valueName: "seconds",
                "How long output may stay over the soft limit.", parse: seconds),

            // MARK: WebSocket

            .optional(
                "ws-port", \.wsPort, valueName: "port",
                "Also serve WebSocket only on this port (kvod's own port serves both); 0 picks a free one.",
                default: "none", parse: port),
            .setting(
                "ws-origins", \.wsOrigins, valueName: "origins",
                "Comma-separated origins (scheme://host[:port]) a browser's WebSocket may come from; others get 403.",
                default: "any origin", show: { $0.isEmpty ? "any" : $0.joined(separator: ",") },
                parse: Configuration.parseOrigins),

            // MARK: TLS

            .path(
                "tls-cert", \.tlsCert, valueName: "file",
                "Speak TLS with this certificate chain (PEM) to clients that start a handshake, on every port "
                    + "(kvods://, wss://, https://); plaintext stays allowed unless --tls-only. SIGHUP reloads it.",
                default: "none (plaintext only)"),
            .path(
                "tls-key", \.tlsKey, valueName: "file", "The private key of the TLS certificate, in PEM.",
                default: "none"),
            .path(
                "tls-ca", \.tlsCA, valueName: "file",
                "CA certificates (PEM) client certificates must chain to (with --tls-client-auth).", default: "none"),
            .setting(
                "tls-client-auth", \.tlsClientAuth, valueName: "mode",
                "Client certificates: none, request (verified when presented) or require. A certificate whose name "
                    + "is a 'tls:NAME' line of the token file authenticates as that token.", show: \.rawValue
            ) { raw throws(SettingError) in
                TLSClientAuth(rawValue: try SettingParser.choice(TLSClientAuth.allCases.map(\.rawValue))(raw)) ?? .none
            },
            .setting(
                "tls-min-version", \.tlsMinVersion, valueName: "version", "The oldest TLS version accepted: 1.2 or 1.3.",
                show: \.rawValue
            ) { raw throws(SettingError) in
                TLSVersion(rawValue: try SettingParser.choice(TLSVersion.allCases.map(\.rawValue))(raw)) ?? .tls12
            },
            .toggle("tls-only", \.tlsOnly, "Refuse connections that do not start a TLS handshake, on every port."),

            // MARK: Web inspector

            .optional(
                "web-port", \.webPort, valueName: "port",
                "Serve the web inspector (a page that browses, watches and sets the graph over WebSocket) on this "
                    + "port, on the same address; 0 picks a free one.", default: "none (no inspector)", parse: port),

            // MARK: Cluster

            .setting(
                "cluster-etcd", \.clusterEtcd, valueName: "urls",
                "Join a cluster coordinated by etcd at these comma-separated client URLs (http://IP:PORT, or "
                    + "https:// for TLS); needs --data-dir, --cluster and --advertise. With --tls-cert, members "
                    + "replicate over TLS too.", default: "none (a single kvod)",
                show: { $0.isEmpty ? "none" : $0.map(\.description).joined(separator: ",") },
                parse: Configuration.parseEtcdEndpoints),
            .path(
                "cluster-etcd-ca", \.clusterEtcdCA, valueName: "file",
                "CA certificates (PEM) etcd's certificate must chain to, for https:// etcd URLs.",
                default: "the system's CAs"),
            .path(
                "cluster-etcd-cert", \.clusterEtcdCert, valueName: "file",
                "A client certificate (PEM) to present to etcd over https, for an etcd that asks for one.",
                default: "none"),
            .path(
                "cluster-etcd-key", \.clusterEtcdKey, valueName: "file", "The private key of the etcd client "
                    + "certificate, in PEM.", default: "none"),
            .optional(
                "cluster", \.cluster, valueName: "name", "The cluster's name (its etcd keys live under /kvod/NAME/).",
                default: "none", parse: Configuration.parseClusterName),
            .optional(
                "advertise", \.advertise, valueName: "host:port",
                "The HOST:PORT other members and clients reach this kvod's port on.", default: "none",
                parse: Configuration.parseAdvertisedAddress),
            .setting(
                "cluster-lease-seconds", \.clusterLeaseSeconds, valueName: "seconds",
                "The etcd lease's TTL: a leader that cannot renew it stops acknowledging mutations before it expires.",
                parse: SettingParser.integer(in: 2...600)),
            .setting(
                "sync-replicas", \.syncReplicas, valueName: "count",
                "The followers that must have a mutation in their journal before the leader answers it (0: "
                    + "asynchronous replication). With fewer attached, mutations get 1012; a response unconfirmed after "
                    + "the lease time closes its connection (replication_timeout).",
                parse: SettingParser.integer(in: 0...16)),
            .setting(
                "replication-backlog", \.replicationBacklog, valueName: "records",
                "Mutations a leader keeps in memory for followers that reconnect; a follower further behind "
                    + "bootstraps from a snapshot.", parse: SettingParser.integer(in: 1...100_000_000)),

            // MARK: Observability

            .setting(
                "log-level", \.logLevel, valueName: "level",
                "Log level: trace, debug, info, notice, warning, error, critical.", show: \.rawValue,
                parse: Configuration.parseLogLevel),
            .setting(
                "log-format", \.logFormat, valueName: "format",
                "Log lines as text, or json (one object per line on stderr).", show: \.rawValue
            ) { raw throws(SettingError) in
                LogFormat(rawValue: try SettingParser.choice(LogFormat.allCases.map(\.rawValue))(raw)) ?? .text
            },
            .optional(
                "metrics-port", \.metricsPort, valueName: "port",
                "Serve Prometheus metrics over HTTP on this port (GET /metrics); 0 picks a free one.",
                default: "none (no metrics endpoint)", parse: port),
            .optional(
                "metrics-host", \.metricsHost, valueName: "address", "The address the metrics endpoint listens on.",
                default: "the value of --host", parse: SettingParser.string),

            .command("version", .flag, "Show the version."),
            .command("help", .flag, "Show help information.", shortName: "h"),
        ]
    }
}
