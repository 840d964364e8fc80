-- POST /notes with a form-urlencoded body, as the original iPhone client sends it
-- (value not percent-encoded, trailing "&"). Every request creates one note.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.body = "body=Benchmark note written by wrk: buy milk, call Alice, water the plants&"
