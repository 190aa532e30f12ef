package tokenizer

import (
	"testing"
)

// Paragraphs written for the benchmark (about 1 KB of text each).
const (
	benchRussian = "Личная база знаний хранит заметки, статьи и выписки из книг. " +
		"Каждый документ делится на фрагменты по несколько абзацев, и для каждого фрагмента " +
		"модель считает вектор, по которому потом ищутся похожие места. Вопрос пользователя " +
		"тоже превращается в вектор, а найденные фрагменты переупорядочивает кросс-энкодер: " +
		"он читает вопрос и фрагмент вместе и оценивает, насколько второй отвечает на первый. " +
		"Чтобы всё это работало быстро, токенизатор должен разбирать русский и английский текст " +
		"без обращения к внешним сервисам, с точностью до байта сохраняя смещения токенов в " +
		"исходной строке: по ним подсвечивается ответ в тексте заметки. Ёлки, ежи и съёмки 2024 года!"
	benchEnglish = "A personal knowledge base keeps notes, articles and passages copied from books. " +
		"Every document is split into chunks of a few paragraphs, and for every chunk a model " +
		"computes a vector that later finds similar passages. The user's question becomes a vector " +
		"too, and a cross-encoder reorders what was found: it reads the question and the passage " +
		"together and scores how well the second answers the first. For all of this to be fast, " +
		"the tokenizer has to handle Russian and English text without calling outside services, " +
		"keeping every token's byte offsets into the original string, which is how the answer is " +
		"highlighted in the note. Numbers like 3.14159, e-mail@example.com and URLs appear as well."
)

func BenchmarkEncode(b *testing.B) {
	toks := []struct {
		name string
		file string
	}{
		{"xlmr", "xlmr-mini.json.gz"},
		{"bert-uncased", "bert-base-uncased.json.gz"},
	}
	texts := []struct{ name, text string }{{"ru", benchRussian}, {"en", benchEnglish}}
	for _, tk := range toks {
		tok := load(b, tk.file)
		for _, tx := range texts {
			b.Run(tk.name+"/"+tx.name, func(b *testing.B) {
				n := len(tok.Encode(tx.text, Truncation{}).IDs)
				b.SetBytes(int64(len(tx.text)))
				b.ReportAllocs()
				for b.Loop() {
					tok.Encode(tx.text, Truncation{})
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

func BenchmarkEncodePairBatch(b *testing.B) {
	tok := load(b, "xlmr-mini.json.gz")
	passages := make([]string, 16)
	for i := range passages {
		passages[i] = benchRussian
		if i%2 == 1 {
			passages[i] = benchEnglish
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		tok.EncodePairBatch("Как токенизатор сохраняет смещения?", passages, Truncation{MaxLength: 128})
	}
}
