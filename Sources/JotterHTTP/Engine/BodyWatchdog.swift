import Glibc
import Synchronization

/// Notices clients that hang up in the middle of a request body, and cuts bodies that arrive
/// too slowly.
///
/// libmicrohttpd 0.9.75's edge-triggered epoll loop can miss the end of a connection that
/// closes while a large body is being read: it reads every byte, takes a short read as
/// "drained", and never sees the FIN that was already queued — so the request (and its
/// temporary files) would wait for the idle timeout. Every 250 ms this looks at the sockets of
/// requests whose body has not moved since the last look; a peer that has closed with nothing
/// left to read gets its socket shut down, which wakes the event loop to abort the request.
///
/// A body must also average `minimumRate` bytes per second once `grace` seconds have passed
/// since its header section (as nginx's `client_body_timeout` bounds a slow body): a client
/// trickling a byte every few seconds would otherwise hold its connection for ever.
final class BodyWatchdog: Sendable {
    private struct Entry { var fd: Int32; var started: UInt64; var lastActivity: UInt64; var bytes: Int }
    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])
    private let stopped = Atomic<Bool>(false)
    private let minimumRate: Int
    private let grace: UInt64
    /// Bodies cut for arriving more slowly than `minimumRate`.
    let slowBodies = Atomic<Int>(0)
    static let interval: UInt64 = 250_000  // microseconds

    init(minimumRate: Int = 0, grace: Double = 10) {
        self.minimumRate = minimumRate
        self.grace = UInt64(grace * 1_000_000)
    }

    /// The header section of a request with a body is complete: its body is awaited on `fd`.
    func begin(_ state: RequestState, fd: Int32) {
        let now = Clock.microseconds()
        entries.withLock { $0[ObjectIdentifier(state)] = Entry(fd: fd, started: now, lastActivity: now, bytes: 0) }
    }

    /// `count` body bytes arrived for `state` on socket `fd`.
    func activity(_ state: RequestState, fd: Int32, count: Int) {
        let now = Clock.microseconds()
        entries.withLock {
            $0[ObjectIdentifier(state), default: Entry(fd: fd, started: now, lastActivity: now, bytes: 0)].lastActivity = now
            $0[ObjectIdentifier(state)]?.bytes += count
        }
    }

    /// The body is complete, or the request is over: its socket is no longer ours to look at.
    func forget(_ state: RequestState) {
        _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(state)) }
    }

    func start() {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        pthread_create(&thread, nil, { raw in
            let watchdog = Unmanaged<BodyWatchdog>.fromOpaque(raw!).takeRetainedValue()
            while !watchdog.stopped.load(ordering: .relaxed) {
                usleep(useconds_t(BodyWatchdog.interval))
                watchdog.sweep()
            }
            return nil
        }, context)
        pthread_detach(thread)
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// The lock is held while a socket is examined, and `forget` (called before libmicrohttpd
    /// closes a finished connection) takes the same lock, so the descriptor is still this
    /// connection's.
    private func sweep() {
        let now = Clock.microseconds()
        entries.withLock { entries in
            // `activity` may have stamped a time after `now` was read: compare without subtracting.
            for (key, entry) in entries {
                if minimumRate > 0, now >= entry.started + grace,
                   UInt64(entry.bytes) * 1_000_000 < UInt64(minimumRate) * (now - entry.started) {
                    shutdown(entry.fd, Int32(SHUT_RDWR))
                    entries.removeValue(forKey: key)
                    slowBodies.add(1, ordering: .relaxed)
                    continue
                }
                guard now >= entry.lastActivity + Self.interval else { continue }
                var byte: UInt8 = 0
                if recv(entry.fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0 {
                    shutdown(entry.fd, Int32(SHUT_RDWR))
                    entries.removeValue(forKey: key)
                }
            }
        }
    }
}
