package analysis

import "strings"

// Stopwords are function words: pronouns, prepositions, conjunctions,
// particles and auxiliary verbs, in every form, ё written as е. They are kept
// out of the lemma column and out of queries (unless a query has nothing
// else), so that a question's "что", "в", "the" or "of" do not match nearly
// every note. Content words that often look like function words (numerals,
// "время", "год") are not stopwords.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(englishStopwords + russianStopwords) {
		m[w] = true
	}
	return m
}()

// IsStopword reports whether a folded word is a stopword.
func IsStopword(w string) bool { return stopwords[w] }

const englishStopwords = `
a an and are as at be been being but by can could did do does doing for from had has have having he her hers
herself him himself his how i if in into is it its itself me my myself no not of on or our ours ourselves she so
than that the their theirs them themselves then there these they this those to us was we were what when where
which who whom whose why will with would you your yours yourself yourselves am s t d ll m re ve
`

const russianStopwords = `
а без более бы был была были было быть в вам вами вас весь во вот все всего всей всем всеми всех всю вся вы
где да даже для до его ее ей ему если есть еще же за здесь и из или им ими их к как какая какие каким
какими каких какое какой каком какую когда кого кое ком кому который которая которого которое которой
котором которому которую которые которым которыми которых кто ли либо между меня мне мной мною мой моя мое
мои моего моей моему моих мы на над нам нами нас наш наша наше наши него нее ней нем нему нет ни нибудь
ним ними них но ну о об от ото по под при про с свой своя свое свои своего своей своему своих своим
своими себе себя со так такая также такие таким такими таких такое такой таком такую там те тем теми тех
то тобой тобою тогда того тоже той том тому только тот ту ты у уж уже хоть чего чей чем через что чтобы
чье чья эта эти этим этими этих это этого этой этом этому этот эту я ею ж бы б ль лишь же ведь вон
будет будут буду будем будете будешь сколько почему зачем каков какова каковы являлся являлась являлось являлись является являются
`
