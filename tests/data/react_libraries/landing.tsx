import { useState } from "react";
import { motion, AnimatePresence } from "framer-motion";
import { ArrowRight, Check, Menu, Rocket, Shield, Sparkles, X, Zap } from "lucide-react";

const FEATURES = [
  { icon: Zap, title: "Lightning fast", body: "Pages load in under a second, everywhere." },
  { icon: Shield, title: "Secure by default", body: "Encryption at rest and in transit, always on." },
  { icon: Sparkles, title: "Delightful", body: "Thoughtful details your users will notice." },
];

const PLANS = [
  { name: "Starter", price: 9, perks: ["1 project", "Email support"] },
  { name: "Pro", price: 29, perks: ["Unlimited projects", "Priority support", "Analytics"] },
];

export default function Landing() {
  const [menuOpen, setMenuOpen] = useState(false);
  return (
    <div className="min-h-screen bg-white text-slate-900">
      <nav className="flex items-center justify-between px-8 py-4">
        <span className="flex items-center gap-2 text-xl font-bold"><Rocket className="h-6 w-6 text-indigo-600" /> Launchpad</span>
        <button aria-label="Toggle menu" onClick={() => setMenuOpen((open) => !open)}>
          {menuOpen ? <X /> : <Menu />}
        </button>
      </nav>
      <AnimatePresence>
        {menuOpen && (
          <motion.ul initial={{ opacity: 0, y: -8 }} animate={{ opacity: 1, y: 0 }} exit={{ opacity: 0 }} className="px-8">
            <li>Features</li>
            <li>Pricing</li>
          </motion.ul>
        )}
      </AnimatePresence>
      <motion.header initial={{ opacity: 0, y: 24 }} animate={{ opacity: 1, y: 0 }} transition={{ duration: 0.6, ease: "easeOut" }}
        className="mx-auto max-w-3xl px-8 py-24 text-center">
        <h1 className="text-5xl font-extrabold tracking-tight">Ship your next idea this weekend</h1>
        <p className="mt-6 text-lg text-slate-600">Everything you need to launch, in one place.</p>
        <motion.button whileHover={{ scale: 1.05 }} whileTap={{ scale: 0.97 }}
          className="mt-8 inline-flex items-center gap-2 rounded-full bg-indigo-600 px-6 py-3 font-semibold text-white">
          Get started <ArrowRight className="h-4 w-4" />
        </motion.button>
      </motion.header>
      <section className="mx-auto grid max-w-5xl grid-cols-3 gap-6 px-8">
        {FEATURES.map(({ icon: Icon, title, body }, i) => (
          <motion.article key={title} initial={{ opacity: 0, y: 16 }} whileInView={{ opacity: 1, y: 0 }}
            viewport={{ once: true }} transition={{ delay: i * 0.1 }} className="rounded-2xl border p-6">
            <Icon className="h-8 w-8 text-indigo-600" />
            <h3 className="mt-4 text-lg font-semibold">{title}</h3>
            <p className="mt-2 text-slate-600">{body}</p>
          </motion.article>
        ))}
      </section>
      <section className="mx-auto mt-16 grid max-w-3xl grid-cols-2 gap-6 px-8 pb-24">
        {PLANS.map((plan) => (
          <div key={plan.name} className="rounded-2xl border p-6">
            <h3 className="text-xl font-bold">{plan.name}</h3>
            <p className="mt-2 text-3xl font-extrabold">${plan.price}<span className="text-base font-normal">/mo</span></p>
            <ul className="mt-4 space-y-2">
              {plan.perks.map((perk) => (
                <li key={perk} className="flex items-center gap-2"><Check className="h-4 w-4 text-emerald-600" />{perk}</li>
              ))}
            </ul>
          </div>
        ))}
      </section>
    </div>
  );
}
