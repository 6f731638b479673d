module falco.bench/wsload

go 1.19
