import Foundation
import Glibc
import JotterTestSupport
import Synchronization

/// Keep-alive clients sending a mix of requests until stopped, each on its own thread (not
/// Swift's cooperative pool, which the test itself runs on): per request the method, the
/// port it was sent to, and the status or the transport error.
final class MixedLoad: @unchecked Sendable {
    struct Outcome: Sendable {
        var port: Int
        var method: String
        var target: String
        /// nil: no answer (connect, send or receive failed; the message in `error`).
        var status: Int?
        var error: String?
        var noteID: String?
    }

    private let running = Atomic<Bool>(true)
    private let outcomes = Mutex<[Outcome]>([])
    private let finished = DispatchGroup()

    /// `clients` lists the port of each client; every client loops over `GET /notes/{readID}`,
    /// `POST /notes` and `GET /notes?limit=10` on one connection (a new one after a failure),
    /// waiting `pause` seconds after each answer (so that the notes created stay well within
    /// the event backlog that a replay can serve).
    init(clients: [Int], readID: String, pause: Double = 0.005) {
        for (index, port) in clients.enumerated() {
            finished.enter()
            let thread = Thread { [self] in
                defer { finished.leave() }
                var connection: RawHTTP?
                var step = index
                while running.load(ordering: .relaxed) {
                    step += 1
                    let (method, target, body): (String, String, [UInt8]) =
                        switch step % 3 {
                        case 0: ("GET", "/notes/\(readID)", [])
                        case 1: ("POST", "/notes", Array("body=load+\(index)+\(step)".utf8))
                        default: ("GET", "/notes?limit=10", [])
                        }
                    var outcome = Outcome(port: port, method: method, target: target)
                    do {
                        if connection == nil { connection = try RawHTTP(port: port, timeout: 10) }
                        let headers = method == "POST" ? [("Content-Type", "application/x-www-form-urlencoded")] : []
                        let response = try connection!.request(method, target, headers: headers, body: body)
                        outcome.status = response.status
                        if method == "POST", response.status == 201 {
                            outcome.noteID = (try? response.json()["note"] as? [String: Any])?["id"] as? String
                        }
                        if response.header("Connection")?.lowercased() == "close" { connection = nil }
                    } catch {
                        outcome.error = "\(error)"
                        connection = nil
                    }
                    let recorded = outcome
                    outcomes.withLock { $0.append(recorded) }
                    usleep(useconds_t(pause * 1_000_000))
                }
            }
            thread.name = "load \(index)"
            thread.start()
        }
    }

    /// Stops the clients (each finishes the request it is in) and returns every outcome.
    func stop() -> [Outcome] {
        running.store(false, ordering: .relaxed)
        finished.wait()
        return outcomes.withLock { $0 }
    }

    /// Outcomes so far.
    var count: Int { outcomes.withLock { $0.count } }
}
