#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Deletes files at once, or — while anyone holds the gate — once the last holder lets go.
///
/// A backup holds it from its database snapshot until it has linked or copied every upload
/// file that snapshot names, so a delete committed meanwhile cannot take a file away from it.
/// Upload files never change once stored, so holding back their removal is all it takes.
///
/// ```swift
/// gate.hold()
/// defer { gate.release() }   // deletes whatever was held back
/// ```
final class RemovalGate: Sendable {
    private struct State {
        var holders = 0
        var pending: [String] = []
    }

    private let state = Mutex(State())

    /// Unlinks `paths` now, or when the gate is released.
    func remove(_ paths: [String]) {
        let now = state.withLock { state -> Bool in
            guard state.holders > 0 else { return true }
            state.pending += paths
            return false
        }
        if now { for path in paths { unlink(path) } }
    }

    func hold() {
        state.withLock { $0.holders += 1 }
    }

    /// Lets go; the last holder unlinks what was held back.
    func release() {
        let due = state.withLock { state -> [String] in
            state.holders -= 1
            guard state.holders == 0 else { return [] }
            defer { state.pending = [] }
            return state.pending
        }
        for path in due { unlink(path) }
    }

    /// How many removals wait for the gate (for tests).
    var pendingCount: Int { state.withLock { $0.pending.count } }
}
