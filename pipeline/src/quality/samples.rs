//! Sample texts for the quality tests: English novel-like paragraphs
//! written for these tests, and real French, German, Spanish and Russian
//! renderings of some of them.

/// English paragraphs of 20 to 80 words, prose as in a novel.
pub(super) const EN: &[&str] = &[
    "The rain had not stopped for three days, and the river behind the mill was rising faster than anyone in the village cared to admit. Martha stood at the kitchen window with a cup of cold tea, watching the water creep toward the garden wall.",
    "He had promised to write every week. For the first month he kept his word, and the letters came on Tuesdays, thick with news of the city and the people he met there. Then they grew thinner, and then they stopped.",
    "\"You should not have come back,\" said the old man without turning around. His voice was quiet, almost gentle, but there was something in it that made Thomas stop on the threshold and keep his hand on the door.",
    "The library smelled of dust and candle wax. Shelves rose into the darkness above them, and somewhere high among the beams an owl shifted its weight and settled again. Clara lifted the lantern and began to read the titles aloud.",
    "Nobody knew exactly when the stranger had arrived. Some said he came with the autumn fair, others that he had walked in from the marshes one foggy morning, carrying nothing but a leather bag and a walking stick carved with strange letters.",
    "She counted the coins twice before she put them back in the tin. It was not enough, and it would not be enough by the end of the month either, no matter how many shirts she mended or how many loaves she baked for the neighbours.",
    "They rode through the night without speaking. The forest pressed close on either side of the road, and every sound seemed louder than it should have been: the creak of leather, the breathing of the horses, the distant cry of a fox.",
    "When the letter finally came, it was not from him at all but from his sister, and it said only that he was ill and asking for her, and that if she wished to see him she should come at once.",
    "The ship was older than the captain and twice as stubborn. Her timbers groaned in every wind, her sails had been patched so many times that no one remembered their original colour, and yet she had never once failed to bring her crew home.",
    "At the end of the garden there was a gate that nobody used. Ivy had grown over the latch and the hinges were red with rust, but the children were certain that it led somewhere, and every summer they tried again to open it.",
    "His mother had always said that trouble came in threes. The first was the broken wheel on the cart, the second was the letter from the bank, and as he stood in the doorway looking at the empty stable, he understood the third.",
    "The market square was full of noise and colour. Merchants shouted their prices over one another, dogs wove between the stalls in search of scraps, and a boy with a drum marched up and down as if he were leading an army.",
];

/// French renderings of the first paragraphs.
pub(super) const FR: &[&str] = &[
    "La pluie n'avait pas cessé depuis trois jours, et la rivière derrière le moulin montait plus vite que personne au village ne voulait l'admettre. Marthe regardait l'eau s'approcher du mur du jardin.",
    "Il avait promis d'écrire chaque semaine. Pendant le premier mois, il a tenu parole, et les lettres arrivaient le mardi, pleines de nouvelles de la ville. Puis elles sont devenues plus rares.",
    "« Tu n'aurais pas dû revenir », dit le vieil homme sans se retourner. Sa voix était calme, presque douce, mais quelque chose en elle fit hésiter Thomas sur le seuil.",
];

/// German renderings of the first paragraphs.
pub(super) const DE: &[&str] = &[
    "Der Regen hatte seit drei Tagen nicht aufgehört, und der Fluss hinter der Mühle stieg schneller, als irgendjemand im Dorf zugeben wollte. Martha stand am Küchenfenster und sah dem Wasser zu.",
    "Er hatte versprochen, jede Woche zu schreiben. Im ersten Monat hielt er sein Wort, und die Briefe kamen dienstags. Dann wurden sie dünner, und schließlich blieben sie ganz aus.",
    "„Du hättest nicht zurückkommen sollen“, sagte der alte Mann, ohne sich umzudrehen. Seine Stimme war leise, fast sanft, aber etwas darin ließ Thomas an der Schwelle stehen bleiben.",
];

/// Spanish renderings of the first paragraphs.
pub(super) const ES: &[&str] = &[
    "La lluvia no había parado en tres días, y el río detrás del molino crecía más rápido de lo que nadie en el pueblo quería admitir. Marta miraba el agua acercarse al muro del jardín.",
    "Había prometido escribir cada semana. Durante el primer mes cumplió su palabra, y las cartas llegaban los martes, llenas de noticias de la ciudad. Luego se hicieron más escasas.",
    "«No deberías haber vuelto», dijo el viejo sin darse la vuelta. Su voz era tranquila, casi amable, pero había algo en ella que hizo que Tomás se detuviera en el umbral.",
];

/// A Russian rendering of the first paragraph.
pub(super) const RU: &str = "Дождь не прекращался уже три дня, и река за мельницей поднималась быстрее, чем кто-либо в деревне хотел признать. Марта стояла у кухонного окна и смотрела на воду.";

#[test]
fn the_english_paragraphs_are_as_described() {
    assert!(EN.len() >= 10);
    for (i, text) in EN.iter().enumerate() {
        let words = text.split_whitespace().count();
        assert!((20..=80).contains(&words), "paragraph {i}: {words} words");
        assert!(!EN[..i].contains(text), "paragraph {i} repeated");
    }
}
