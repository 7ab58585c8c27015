//! Account namespaces: readable, unique DNS labels such as `tiny-ferret-maroon-123`.
//! Uniqueness is enforced by the store (a conditional write of a claim item), not here.

use rand::Rng;
use rand::seq::IndexedRandom;

const ADJECTIVES: &[&str] = &[
    "tiny", "brave", "calm", "eager", "fancy", "gentle", "happy", "jolly", "kind", "lively",
    "merry", "nimble", "proud", "quick", "quiet", "swift", "witty", "zesty", "bold", "bright",
];
const ANIMALS: &[&str] = &[
    "ferret", "otter", "badger", "falcon", "heron", "lynx", "marten", "owl", "panda", "puffin",
    "raven", "seal", "stoat", "tapir", "walrus", "wombat", "yak", "zebra", "koala", "gecko",
];
const COLOURS: &[&str] = &[
    "maroon", "amber", "azure", "coral", "cyan", "indigo", "ivory", "jade", "lemon", "lilac",
    "olive", "peach", "plum", "rust", "sage", "teal", "umber", "violet", "scarlet", "slate",
];

pub fn generate() -> String {
    let mut rng = rand::rng();
    let pick = |words: &[&'static str], rng: &mut rand::rngs::ThreadRng| {
        *words.choose(rng).unwrap_or(&"agent")
    };
    let adjective = pick(ADJECTIVES, &mut rng);
    let animal = pick(ANIMALS, &mut rng);
    let colour = pick(COLOURS, &mut rng);
    format!(
        "{adjective}-{animal}-{colour}-{}",
        rng.random_range(100..1000)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn namespaces_are_dns_labels() {
        for _ in 0..100 {
            let namespace = super::generate();
            assert!(crate::validation::is_dns_label(&namespace), "{namespace}");
            assert_eq!(namespace.split('-').count(), 4);
        }
    }
}
