// kvod's command-line flags. Every setting is an optional string here, so that an absent flag falls through to the
// environment and the config file (SettingLayers.swift) and every value is checked in one place (Configuration.swift).
// The help of each names its environment variable and its default, taken from `Configuration.defaults`.
import ArgumentParser
import KVOServer

/// The flags of `kvod`.
struct DaemonOptions: ParsableArguments {
    private static let defaults = Configuration.defaults

    @Option(help: ArgumentHelp(
        "A JSON config file whose keys are these long option names, e.g. {\"port\": 7070}. Env KVOD_CONFIG.",
        valueName: "file"))
    var config: String?

    @Flag(help: "Print the effective configuration (each setting, its value and source) as JSON and exit.")
    var printConfig = false

    @Option(help: ArgumentHelp(
        "Print the snapshot in this data directory as JSON (for people and tools) and exit; works beside a running kvod.",
        valueName: "dir"))
    var dumpSnapshot: String?

    // MARK: - Serving

    @Option(help: .setting("The address to listen on.", "host", default: defaults.host, valueName: "address"))
    var host: String?

    @Option(help: .setting(
        "The TCP port to listen on; 0 picks a free one.", "port", default: "\(defaults.port)", valueName: "port"))
    var port: String?

    @Option(help: .setting(
        "A model file declaring the classes to serve (docs/MODEL.md).", "model", default: "the embedded seed model",
        valueName: "file"))
    var model: String?

    @Flag(
        inversion: .prefixedNo,
        help: .setting(
            "Serve an empty open root (any key, any value) instead of the default model.", "empty", default: "false",
            valueName: "bool"))
    var empty: Bool?

    // MARK: - Durability and resuming

    @Option(help: .setting(
        "Keep the graph in this directory (journal and snapshots) and reload it at start.", "data-dir",
        default: "none (in memory)", valueName: "dir"))
    var dataDir: String?

    @Option(help: .setting(
        "When the journal is fsynced: always (before responses are sent), everysec, no.", "fsync",
        default: defaults.fsync.rawValue, valueName: "policy"))
    var fsync: String?

    @Option(help: .setting(
        "Snapshot the graph after this many journal records (0: only at shutdown).", "snapshot-every",
        default: "\(defaults.snapshotEvery)", valueName: "records"))
    var snapshotEvery: String?

    @Option(help: .setting(
        "Changes kept so that a subscription can resume with 'since' (0: no resuming).", "history",
        default: "\(defaults.history)", valueName: "count"))
    var history: String?

    // MARK: - Access control and limits

    @Option(help: .setting(
        "Tokens clients must present in hello, one 'TOKEN read-write|read-only' per line; KVOD_TOKEN adds one "
            + "read-write token.", "token-file", default: "none (no access control)", valueName: "file"))
    var tokenFile: String?

    @Option(help: .setting(
        "Client connections open at once; one more is sent closing (too_many_connections).", "max-connections",
        default: "\(defaults.limits.maxConnections)", valueName: "count"))
    var maxConnections: String?

    @Option(help: .setting(
        "Subscriptions one connection may hold; one more is error 1009.", "max-subscriptions",
        default: "\(defaults.limits.maxSubscriptionsPerConnection)", valueName: "count"))
    var maxSubscriptions: String?

    @Option(help: .setting(
        "The longest request line accepted (1024 or more); a longer one closes the connection.", "max-line-bytes",
        default: "\(defaults.limits.maxLineBytes)", valueName: "bytes"))
    var maxLineBytes: String?

    @Option(help: .setting(
        "Requests in one batch, and ops in one transaction.", "max-batch-requests",
        default: "\(defaults.limits.maxBatchRequests)", valueName: "count"))
    var maxBatchRequests: String?

    @Option(
        name: .customLong("max-json-depth"),
        help: .setting(
            "The deepest nesting of arrays and objects in a request (2 to 64).", "max-json-depth",
            default: "\(defaults.limits.maxJSONDepth)", valueName: "levels"))
    var maxJSONDepth: String?

    @Option(help: .setting(
        "Wrong tokens a connection may send before it is closed (0: no limit).", "max-auth-failures",
        default: "\(defaults.limits.maxAuthenticationFailures)", valueName: "count"))
    var maxAuthFailures: String?

    @Option(help: .setting(
        "With tokens: seconds a connection may stay without an accepted hello before it is closed (0: no limit).",
        "auth-timeout", default: "\(defaults.limits.authTimeoutSeconds)", valueName: "seconds"))
    var authTimeout: String?

    @Option(help: .setting(
        "Output queued for a client beyond which it is closed at once (slow_consumer; 0: no limit).",
        "output-hard-limit-bytes", default: "\(defaults.limits.outputHardLimitBytes)", valueName: "bytes"))
    var outputHardLimitBytes: String?

    @Option(help: .setting(
        "Output queued for a client beyond which, for --output-soft-limit-seconds, it is closed (0: no limit).",
        "output-soft-limit-bytes", default: "\(defaults.limits.outputSoftLimitBytes)", valueName: "bytes"))
    var outputSoftLimitBytes: String?

    @Option(help: .setting(
        "How long output may stay over the soft limit.", "output-soft-limit-seconds",
        default: "\(defaults.limits.outputSoftLimitSeconds)", valueName: "seconds"))
    var outputSoftLimitSeconds: String?

    // MARK: - WebSocket

    @Option(help: .setting(
        "Also serve WebSocket only on this port (kvod's own port serves both); 0 picks a free one.", "ws-port",
        default: "none", valueName: "port"))
    var wsPort: String?

    @Option(help: .setting(
        "Comma-separated origins (scheme://host[:port]) a browser's WebSocket may come from; others get 403.",
        "ws-origins", default: "any origin", valueName: "origins"))
    var wsOrigins: String?

    // MARK: - Web inspector

    @Option(help: .setting(
        "Serve the web inspector (a page that browses, watches and sets the graph over WebSocket) on this port, on "
            + "the same address; 0 picks a free one.", "web-port", default: "none (no inspector)", valueName: "port"))
    var webPort: String?

    // MARK: - Cluster

    @Option(help: .setting(
        "Join a cluster coordinated by etcd at these comma-separated client URLs (http://IP:PORT); needs --data-dir, "
            + "--cluster and --advertise.", "cluster-etcd", default: "none (a single kvod)", valueName: "urls"))
    var clusterEtcd: String?

    @Option(help: .setting(
        "The cluster's name (its etcd keys live under /kvod/NAME/).", "cluster", default: "none", valueName: "name"))
    var cluster: String?

    @Option(help: .setting(
        "The HOST:PORT other members and clients reach this kvod's port on.", "advertise", default: "none",
        valueName: "host:port"))
    var advertise: String?

    @Option(help: .setting(
        "The etcd lease's TTL: a leader that cannot renew it stops acknowledging mutations before it expires.",
        "cluster-lease-seconds", default: "\(defaults.clusterLeaseSeconds)", valueName: "seconds"))
    var clusterLeaseSeconds: String?

    @Option(help: .setting(
        "Mutations a leader keeps in memory for followers that reconnect; a follower further behind bootstraps from "
            + "a snapshot.", "replication-backlog", default: "\(defaults.replicationBacklog)", valueName: "records"))
    var replicationBacklog: String?

    @Option(help: .setting(
        "The followers that must have a mutation in their journal before the leader answers it (0: asynchronous "
            + "replication). With fewer attached, mutations get 1012; a response unconfirmed after the lease time "
            + "closes its connection (replication_timeout).", "sync-replicas", default: "\(defaults.syncReplicas)",
        valueName: "count"))
    var syncReplicas: String?

    // MARK: - Observability

    @Option(help: .setting(
        "Log level: trace, debug, info, notice, warning, error, critical.", "log-level",
        default: defaults.logLevel.rawValue, valueName: "level"))
    var logLevel: String?

    @Option(help: .setting(
        "Log lines as text, or json (one object per line on stderr).", "log-format",
        default: defaults.logFormat.rawValue, valueName: "format"))
    var logFormat: String?

    @Option(help: .setting(
        "Serve Prometheus metrics over HTTP on this port (GET /metrics); 0 picks a free one.", "metrics-port",
        default: "none (no metrics endpoint)", valueName: "port"))
    var metricsPort: String?

    @Option(help: .setting(
        "The address the metrics endpoint listens on.", "metrics-host", default: "the value of --host",
        valueName: "address"))
    var metricsHost: String?
}

extension ArgumentHelp {
    /// A setting's help: what it does, then its environment variable and default.
    static func setting(_ abstract: String, _ name: String, default: String, valueName: String) -> ArgumentHelp {
        ArgumentHelp(
            "\(abstract) Env \(SettingLayers.environmentName(name)); default \(`default`).", valueName: valueName)
    }
}
