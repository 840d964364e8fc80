module jotter/bench/peers/go

go 1.19
