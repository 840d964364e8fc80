import Glibc
import Synchronization
import JotterSystem

/// Gives each request an id — the client's `X-Request-Id` when it is a short token, otherwise
/// a per-process random prefix and a counter (`k3x9a-12`) — puts it in `context.requestID`
/// and sends it back as `X-Request-Id` on every answer.
///
/// Register it first, so that the errors refused before routing carry the id too.
public final class RequestIDMiddleware: Middleware {
    private let counter = Atomic<UInt64>(0)
    private let prefix: String

    public init() {
        prefix = String(SystemRandom.value(UInt32.self), radix: 36) + "-"
    }

    public func head(_ head: RequestHead, context: inout RequestContext) throws {
        context.requestID = id(from: head.headers)
    }

    /// A request that could not be parsed gets an id of this server's own.
    public func unparsed(context: inout RequestContext) {
        context.requestID = id(from: HTTPHeaders())
    }

    public func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        var reply = try next(request, context)
        let sent = reply.updateNow { $0.headers.set("X-Request-Id", context.requestID) }  // the common case, without a closure
        if sent { return reply }
        let id = context.requestID
        return reply.map { response in
            var response = response
            response.headers.set("X-Request-Id", id)
            return response
        }
    }

    func id(from headers: HTTPHeaders) -> String {
        let sent = headers.withValueBytes(of: "X-Request-Id") { value -> String? in
            guard let value, (1...64).contains(value.count),
                value.allSatisfy({ FramingCheck.isTokenByte($0) && $0 != UInt8(ascii: "%") })
            else { return nil }
            return String(decoding: value, as: UTF8.self)
        }
        if let sent { return sent }
        // The prefix and the counter's digits written into the string at once.
        let number = counter.add(1, ordering: .relaxed).newValue
        var digits = 1
        var rest = number / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return prefix.utf8.withContiguousStorageIfAvailable { prefix in
            String(unsafeUninitializedCapacity: prefix.count + digits) { buffer in
                _ = buffer.initialize(fromContentsOf: prefix)
                var value = number
                for index in stride(from: prefix.count + digits - 1, through: prefix.count, by: -1) {
                    buffer[index] = UInt8(truncatingIfNeeded: value % 10) + 0x30
                    value /= 10
                }
                return prefix.count + digits
            }
        } ?? prefix + String(number)
    }
}

/// One access-log line per finished request, refused and aborted ones included:
/// `2026-11-30T14:35:40Z 127.0.0.1 "GET /hello?name=Bob HTTP/1.1" 200 10 0.085ms id=k3x9a-12`.
public struct AccessLogMiddleware: Middleware {
    let log: Logger

    public init(log: Logger) { self.log = log }

    public func completed(_ exchange: CompletedExchange) {
        guard log.accessLog else { return }
        let method = exchange.head.map { $0.originalMethod.rawValue } ?? "-"
        log.access(
            remote: exchange.remoteAddress, method: method.isEmpty ? "-" : method, target: exchange.target,
            version: exchange.head?.version ?? "-", status: exchange.status, bytes: exchange.bytesSent,
            microseconds: exchange.microseconds, requestID: exchange.context.requestID, outcome: exchange.outcome.rawValue)
    }
}
