// The web inspector's files (Inspector/, embedded in the executable at build time), handed to the server as bytes
// for `--web-port`: the page, its code and style, and the TypeScript client it imports (Inspector/kvod.js, a link to
// clients/typescript/dist/index.js). What the page does is Inspector/inspector.js; how it is served, KVOServer's
// WebServer.swift.
import KVOServer

/// The inspector's files as the web port serves them.
enum Inspector {
    static var files: [WebFile] {
        [
            WebFile(path: "/index.html", bytes: PackageResources.index_html),
            WebFile(path: "/inspector.js", bytes: PackageResources.inspector_js),
            WebFile(path: "/inspector.css", bytes: PackageResources.inspector_css),
            WebFile(path: "/kvod.js", bytes: PackageResources.kvod_js),
        ]
    }
}
