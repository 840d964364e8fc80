import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

/// When and how long the client waits before sending an idempotent request again.
///
/// `GET`, `HEAD`, `PUT` and `DELETE` are retried when the connection fails (refused, lost, timed
/// out, or closed with no answer at all) and on `408 Request Timeout`, `429 Too Many Requests`,
/// `502 Bad Gateway`, `503 Service Unavailable` and `504 Gateway Timeout` (what a proxy answers
/// when the instance it chose died); a `Retry-After`
/// from the server is honoured (up to `maximumRetryAfter`), otherwise the wait doubles from
/// `initialDelay` up to `maximumDelay`, with jitter. A `POST` is retried only with an
/// `Idempotency-Key` (the SDK sends one on every POST, so the server answers a retry with the
/// first answer and creates nothing twice), with the same key, and also on `409` with a
/// `Retry-After` (the first attempt still running on some instance); `PATCH` never.
///
/// ```swift
/// var configuration = JotterClient.Configuration()
/// configuration.retry = RetryPolicy(maximumAttempts: 6, maximumDelay: 20)
/// configuration.retry = .never
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first one included (1 means no retries).
    public var maximumAttempts: Int
    /// Seconds before the first retry when the server gives no `Retry-After`.
    public var initialDelay: Double
    /// The cap of the exponential backoff, in seconds.
    public var maximumDelay: Double
    /// A longer `Retry-After` is not waited for: the error is thrown (its `retryAfter` says how long).
    public var maximumRetryAfter: Double

    /// Four attempts, waits of 0.25 s doubling to 8 s, `Retry-After` up to 30 s by default.
    public init(maximumAttempts: Int = 4, initialDelay: Double = 0.25, maximumDelay: Double = 8, maximumRetryAfter: Double = 30) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// One attempt only.
    public static let never = RetryPolicy(maximumAttempts: 1)

    static let idempotentMethods: Set<String> = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]
    static let retryableStatuses: Set<Int> = [408, 429, 502, 503, 504]
    /// Connection failures. `badServerResponse` is how URLSession on Linux reports a connection
    /// closed with no answer ("Empty reply from server", -1011): an instance that died, a proxy
    /// that cut it; retried like a lost connection, and like it only for a request safe to repeat.
    static let retryableTransportCodes: Set<URLError.Code> = [
        .cannotConnectToHost, .networkConnectionLost, .timedOut, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet,
        .badServerResponse,
    ]

    /// Seconds to wait before attempt `attempt + 1` after `error` ended attempt `attempt`
    /// (counted from 1), or `nil` when the request must not be sent again.
    func delay(after error: JotterClientError, attempt: Int, method: String, idempotencyKey: Bool = false) -> Double? {
        let method = method.uppercased()
        guard attempt < maximumAttempts, Self.idempotentMethods.contains(method) || (method == "POST" && idempotencyKey) else { return nil }
        if let status = error.status {
            // 409 with Retry-After: the key's first request is still running (IdempotencyMiddleware).
            let stillRunning = status == 409 && idempotencyKey && error.retryAfter != nil
            guard Self.retryableStatuses.contains(status) || stillRunning else { return nil }
        } else {
            guard error.isTransport, let code = error.urlErrorCode, Self.retryableTransportCodes.contains(code) else { return nil }
        }
        if let retryAfter = error.retryAfter {
            return retryAfter <= maximumRetryAfter ? retryAfter : nil
        }
        return backoff(attempt: attempt)
    }

    /// Capped exponential backoff with jitter: half of the step fixed, half random.
    func backoff(attempt: Int) -> Double {
        let step = min(maximumDelay, initialDelay * pow(2, Double(min(attempt - 1, 30))))
        return step / 2 + Double.random(in: 0...(step / 2))
    }

    /// `Retry-After` in seconds: delay-seconds (`120`) or an HTTP-date (`Wed, 21 Oct 2026 07:28:00 GMT`).
    static func retryAfter(_ response: HTTPURLResponse, now: Date = Date()) -> Double? {
        guard let value = response.value(forHTTPHeaderField: "Retry-After")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Int(value), seconds >= 0 { return Double(seconds) }
        return httpDate(value).map { max(0, $0 - now.timeIntervalSince1970) }
    }

    /// Unix seconds of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP-date format
    /// senders must use (RFC 9110 §5.6.7).
    static func httpDate(_ text: String) -> Double? {
        let parts = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[5] == "GMT", let month = months.firstIndex(of: String(parts[2])),
            let seconds = Timestamp.parse("\(parts[3])-\(month + 1)-\(parts[1]) \(parts[4])")
        else { return nil }
        return Double(seconds)
    }
}
