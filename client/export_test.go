package client

// The paths a timeout looks at, for path_test.go.
var (
	SearchPath   = searchPath
	AnswerPath   = answerPath
	ResearchPath = researchPath
)
