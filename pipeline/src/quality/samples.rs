//! Sample texts for the quality tests: English novel-like paragraphs
//! written for these tests, and faithful French, German, Spanish and
//! Russian translations of some of them (every sentence rendered, none
//! added, as the sentence checks expect of a clean translation).

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

/// French translations of the first paragraphs, sentence for sentence.
pub(super) const FR: &[&str] = &[
    "La pluie n'avait pas cessé depuis trois jours, et la rivière derrière le moulin montait plus vite que personne au village ne voulait l'admettre. Marthe se tenait à la fenêtre de la cuisine, une tasse de thé froid à la main, et regardait l'eau ramper vers le mur du jardin.",
    "Il avait promis d'écrire chaque semaine. Le premier mois, il tint parole, et les lettres arrivaient le mardi, pleines de nouvelles de la ville et des gens qu'il y rencontrait. Puis elles se firent plus minces, et enfin elles cessèrent.",
    "« Tu n'aurais pas dû revenir », dit le vieil homme sans se retourner. Sa voix était calme, presque douce, mais il y avait en elle quelque chose qui fit s'arrêter Thomas sur le seuil, la main sur la porte.",
];

/// German translations of the first paragraphs, sentence for sentence.
pub(super) const DE: &[&str] = &[
    "Der Regen hatte seit drei Tagen nicht aufgehört, und der Fluss hinter der Mühle stieg schneller, als irgendjemand im Dorf zugeben wollte. Martha stand mit einer Tasse kaltem Tee am Küchenfenster und sah zu, wie das Wasser auf die Gartenmauer zukroch.",
    "Er hatte versprochen, jede Woche zu schreiben. Im ersten Monat hielt er sein Wort, und die Briefe kamen dienstags, voller Neuigkeiten aus der Stadt und von den Menschen, die er dort traf. Dann wurden sie dünner, und dann blieben sie ganz aus.",
    "„Du hättest nicht zurückkommen sollen“, sagte der alte Mann, ohne sich umzudrehen. Seine Stimme war leise, fast sanft, aber etwas darin ließ Thomas auf der Schwelle innehalten, die Hand an der Tür.",
];

/// Spanish translations of the first paragraphs, sentence for sentence.
pub(super) const ES: &[&str] = &[
    "La lluvia no había parado en tres días, y el río detrás del molino crecía más rápido de lo que nadie en el pueblo quería admitir. Marta estaba junto a la ventana de la cocina con una taza de té frío, mirando cómo el agua avanzaba hacia el muro del jardín.",
    "Había prometido escribir cada semana. Durante el primer mes cumplió su palabra, y las cartas llegaban los martes, llenas de noticias de la ciudad y de la gente que conocía allí. Luego se fueron haciendo más escasas, y después dejaron de llegar.",
    "«No deberías haber vuelto», dijo el viejo sin darse la vuelta. Su voz era tranquila, casi amable, pero había algo en ella que hizo que Tomás se detuviera en el umbral, con la mano en la puerta.",
];

/// A Russian translation of the first paragraph.
pub(super) const RU: &str = "Дождь не прекращался уже три дня, и река за мельницей поднималась быстрее, чем кто-либо в деревне хотел признать. Марта стояла у кухонного окна с чашкой холодного чая и смотрела, как вода подбирается к садовой стене.";

#[test]
fn the_english_paragraphs_are_as_described() {
    assert!(EN.len() >= 10);
    for (i, text) in EN.iter().enumerate() {
        let words = text.split_whitespace().count();
        assert!((20..=80).contains(&words), "paragraph {i}: {words} words");
        assert!(!EN[..i].contains(text), "paragraph {i} repeated");
    }
}
