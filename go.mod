module hsdb

go 1.26.8

require (
	github.com/dlclark/regexp2 v1.12.0
	github.com/eliben/go-sentencepiece v0.7.0
	github.com/nlpodyssey/gopickle v0.2.0
	github.com/x448/float16 v0.8.4
	golang.org/x/text v0.44.0
	google.golang.org/protobuf v1.36.12
)
