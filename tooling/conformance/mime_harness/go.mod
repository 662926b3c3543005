module harness

go 1.19
