package claimcheck

import "strings"

// A unit is a concept shared by both languages ("day" for day, days, день,
// дня, дней), with the kind of fact a number in it makes.
type unit struct {
	concept string
	kind    string // quantity, percent, money
}

// unitWords maps a folded word to its unit. attachedUnits hold the short
// forms that count only written against the number ("30s", "2h", "5d"):
// alone they are letters or prepositions.
var unitWords, attachedUnits = buildUnits()

// currencySymbols stand before or after an amount.
var currencySymbols = map[string]string{"$": "usd", "€": "eur", "£": "gbp", "¥": "cny", "₽": "rub", "₴": "uah", "₸": "kzt"}

func buildUnits() (words, attachedOnly map[string]unit) {
	words, attachedOnly = map[string]unit{}, map[string]unit{}
	add := func(concept, kind, en, ru string) {
		u := unit{concept, kind}
		for _, w := range strings.Fields(en) {
			words[w] = u
			// English plurals: "day" -> "days"; forms that already end in s
			// (or are abbreviations ending in a capital) are listed as they are.
			if !strings.HasSuffix(w, "s") && len(w) >= 3 {
				words[w+"s"] = u
			}
		}
		for _, w := range strings.Fields(ru) {
			words[w] = u
		}
	}
	const q, p, m = "quantity", "percent", "money"
	add("millisecond", q, "ms millisecond msec", "мс миллисекунда миллисекунды миллисекунд миллисекунду миллисекундах миллисекундами")
	add("second", q, "second sec secs", "секунда секунды секунд секунду секундой секундам секундами секундах сек")
	add("minute", q, "minute min mins", "минута минуты минут минуту минутой минутам минутами минутах мин")
	add("hour", q, "hour hr hrs", "час часа часов часу часом часам часами часах ч")
	add("day", q, "day", "день дня дню днем дне дни дней дням днями днях сутки суток суткам сутками сутках")
	add("week", q, "week", "неделя недели неделю неделей неделе недель неделям неделями неделях нед")
	add("month", q, "month", "месяц месяца месяцу месяцем месяце месяцы месяцев месяцам месяцами месяцах мес")
	add("year", q, "year yr yrs", "год года году годом годе годы годов годам годами годах лет")
	add("byte", q, "byte", "байт байта байтов байтах")
	add("kb", q, "kb kib kilobyte", "кб кбайт килобайт килобайта килобайтов")
	add("mb", q, "mb mib megabyte", "мб мбайт мегабайт мегабайта мегабайтов")
	add("gb", q, "gb gib gigabyte", "гб гбайт гигабайт гигабайта гигабайтов")
	add("tb", q, "tb tib terabyte", "тб тбайт терабайт терабайта терабайтов")
	add("pixel", q, "px pixel", "пиксель пикселя пикселей пикселях пикс")
	add("character", q, "character char chars", "символ символа символов символы символам символами")
	add("word", q, "word", "слово слова слов словам словами")
	add("line", q, "line", "строка строки строк строку строкам строками")
	add("row", q, "row", "ряд ряда рядов")
	add("column", q, "column", "столбец столбца столбцов колонка колонки колонок")
	add("page", q, "page", "страница страницы страниц страницу страницам")
	add("time", q, "times", "раз раза")
	add("item", q, "item", "элемент элемента элементов пункт пункта пунктов")
	add("file", q, "file", "файл файла файлов файлы файлам файлами")
	add("folder", q, "folder directory directories", "папка папки папок каталог каталога каталогов")
	add("block", q, "block", "блок блока блоков блоки блокам")
	add("document", q, "document doc docs", "документ документа документов документы")
	add("notebook", q, "notebook", "блокнот блокнота блокнотов блокноты")
	add("note", q, "note", "заметка заметки заметок заметку")
	add("device", q, "device", "устройство устройства устройств устройствах")
	add("user", q, "user", "пользователь пользователя пользователей пользователи")
	add("level", q, "level", "уровень уровня уровней")
	add("step", q, "step", "шаг шага шагов шаги")
	add("tab", q, "tab", "вкладка вкладки вкладок")
	add("snapshot", q, "snapshot", "снимок снимка снимков")
	add("version", q, "versions", "")
	add("percent", p, "percent percentage pct", "процент процента процентов проценты процентам процентах проц")
	add("usd", m, "usd dollar dollars", "доллар доллара долларов доллары долл")
	add("eur", m, "eur euro euros", "евро")
	add("rub", m, "rub ruble rubles rouble roubles", "рубль рубля рублей рубли руб")
	add("cny", m, "cny rmb yuan", "юань юаня юаней")
	add("gbp", m, "gbp pound pounds", "фунт фунта фунтов")
	add("cent", m, "cent", "цент цента центов")
	attachedOnly["s"] = unit{"second", q}
	attachedOnly["h"] = unit{"hour", q}
	attachedOnly["d"] = unit{"day", q}
	attachedOnly["w"] = unit{"week", q}
	attachedOnly["b"] = unit{"byte", q}
	attachedOnly["с"] = unit{"second", q}
	attachedOnly["р"] = unit{"rub", m}
	return words, attachedOnly
}

// multipliers scale the number before them: "5 thousand", "5 тысяч", "5k".
var multipliers = func() map[string]float64 {
	m := map[string]float64{}
	for _, w := range strings.Fields("thousand thousands тысяча тысячи тысячу тысяч тысячам тысячами тысячах тысячей тыс") {
		m[w] = 1e3
	}
	for _, w := range strings.Fields("million millions миллион миллиона миллионов миллионам миллионами млн") {
		m[w] = 1e6
	}
	for _, w := range strings.Fields("billion billions миллиард миллиарда миллиардов млрд") {
		m[w] = 1e9
	}
	return m
}()

// Cardinal number words, English and Russian in all their cases, up to the
// hundreds; sequences add up ("twenty five", "сто двадцать").
var cardinals = buildCardinals()

func buildCardinals() map[string]int {
	m := map[string]int{}
	en := strings.Fields("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen")
	for i, w := range en {
		m[w] = i
	}
	for i, w := range strings.Fields("twenty thirty forty fifty sixty seventy eighty ninety") {
		m[w] = (i + 2) * 10
	}
	m["hundred"] = 100
	m["hundreds"] = 100
	m["dozen"] = 12
	set := func(v int, forms string) {
		for _, f := range strings.Fields(forms) {
			m[f] = v
		}
	}
	set(0, "ноль нуль ноля нуля нолю нулю")
	set(1, "один одного одному одним одном одна одной одну одною одно одни одних одними")
	set(2, "два две двух двум двумя")
	set(3, "три трех трем тремя")
	set(4, "четыре четырех четырем четырьмя")
	// Numerals in -ь: пять, пяти, пятью.
	soft := []string{"пять", "шесть", "семь", "восемь", "девять", "десять", "одиннадцать", "двенадцать", "тринадцать",
		"четырнадцать", "пятнадцать", "шестнадцать", "семнадцать", "восемнадцать", "девятнадцать", "двадцать", "тридцать"}
	vals := []int{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 30}
	for i, w := range soft {
		stem := strings.TrimSuffix(w, "ь")
		set(vals[i], w+" "+stem+"и "+stem+"ью")
	}
	set(8, "восьми восьмью")
	set(40, "сорок сорока")
	set(90, "девяносто девяноста")
	set(100, "сто ста")
	set(50, "пятьдесят пятидесяти пятьюдесятью")
	set(60, "шестьдесят шестидесяти шестьюдесятью")
	set(70, "семьдесят семидесяти семьюдесятью")
	set(80, "восемьдесят восьмидесяти восемьюдесятью")
	set(200, "двести двухсот двумстам двумястами двухстах")
	set(300, "триста трехсот тремстам тремястами трехстах")
	set(400, "четыреста четырехсот четыремстам четырьмястами четырехстах")
	for i, w := range []string{"пятьсот", "шестьсот", "семьсот", "восемьсот", "девятьсот"} {
		set((i+5)*100, w)
	}
	set(500, "пятисот пятистам пятьюстами пятистах")
	set(600, "шестисот шестистам шестьюстами шестистах")
	set(700, "семисот семистам семьюстами семистах")
	set(800, "восьмисот восьмистам восьмьюстами восьмистах")
	set(900, "девятисот девятистам девятьюстами девятистах")
	return m
}

// ordinalSuffix: "1st", "2nd", "3rd", "15th".
var ordinalSuffix = map[string]bool{"st": true, "nd": true, "rd": true, "th": true}

// Month names: English (capitalised in text) and Russian in every case.
var months = func() map[string]int {
	m := map[string]int{}
	en := []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}
	for i, w := range en {
		m[w] = i + 1
		if len(w) > 3 {
			m[w[:3]] = i + 1
		}
	}
	m["sept"] = 9
	ru := []string{"январ", "феврал", "март", "апрел", "ма", "июн", "июл", "август", "сентябр", "октябр", "ноябр", "декабр"}
	for i, stem := range ru {
		var ends []string
		switch stem {
		case "март", "август":
			ends = []string{"", "а", "у", "ом", "е"}
		case "ма":
			ends = []string{"й", "я", "ю", "ем", "е"}
		default:
			ends = []string{"ь", "я", "ю", "ем", "е"}
		}
		for _, e := range ends {
			m[stem+e] = i + 1
		}
	}
	for i, w := range []string{"янв", "фев", "мар", "апр", "", "июн", "июл", "авг", "сен", "окт", "ноя", "дек"} {
		if w != "" {
			m[w] = i + 1
		}
	}
	return m
}()

// ambiguousMonth are month words that are ordinary words too ("may",
// "march", "мая" is not): they make a date only next to a number.
var ambiguousMonth = map[string]bool{"may": true, "march": true, "mar": true, "jan": true, "sat": true, "sun": true,
	"мар": true, "сен": true, "дек": true, "окт": true, "июн": true, "июл": true, "янв": true, "фев": true, "апр": true, "авг": true, "ноя": true,
	"dec": true, "oct": true, "nov": true, "sep": true, "aug": true, "apr": true, "feb": true, "jun": true, "jul": true}

// yearWords after a 4-digit number make it a year ("2024 года", "2024 г.").
var yearWords = map[string]bool{"год": true, "года": true, "году": true, "годом": true, "г": true, "гг": true}

// versionWords before a dotted number make it a version.
var versionWords = map[string]bool{"version": true, "versions": true, "v": true, "ver": true, "release": true, "версия": true,
	"версии": true, "версию": true, "версией": true, "версий": true, "релиз": true}

// meridiem: "2 pm", "2:00 AM".
var meridiem = map[string]int{"am": 0, "pm": 12}
