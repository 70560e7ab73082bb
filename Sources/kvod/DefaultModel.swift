// The graph kvod serves when started without a model: one open root, where any key may be set.
import ObjectGraph

/// The embedded default graph.
enum DefaultModel {
    static func makeGraph() -> Graph {
        Graph(rootClass: .open)
    }
}
